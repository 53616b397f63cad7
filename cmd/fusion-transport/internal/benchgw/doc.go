// Package benchgw is the benchmark gateway: an HTTP handler that answers the
// gateway benchmark's deep-recursion query (The Guild's
// graphql-gateways-benchmark; a copy sits in cmd/fusion-transport/internal/load) by running that
// query's plan against the four source schemas through a transport.Invoker.
//
//	inv, err := transport.New(cfg) // cfg names accounts, inventory, products, reviews
//	if err != nil { ... }
//	defer inv.Close()
//	http.Handle("/graphql", benchgw.Handler(inv))
//
// # The plan
//
// The plan is fixed. It is the shape of the benchmark written out by hand, not
// the output of a query planner, and every POST is answered as if it carried
// the deep-recursion query. What the gateway does per request is what a
// federated gateway does for that query: dependent waves of source schema
// requests, the entity fetches of one wave to one source schema merged into
// one request with aliases, every answer parsed with encoding/json and merged
// into the response tree, and the tree encoded as the answer.
//
//	wave 1  accounts   { users { id username name } }
//	        products   { topProducts { upc name price weight } }
//	wave 2  reviews    u:  User    (the users)        { reviews { id body product { upc reviews { REVIEW } } } }
//	                   p:  Product (the top products) { reviews { REVIEW } }
//	        where REVIEW is id body author { id username reviews { id body product { upc } } }
//	wave 3  products   p0, p1, p2: Product (the products found in wave 2) { name price weight }
//	        accounts   a0, a1:     User    (the review authors)          { name }
//	wave 4  inventory  i0 to i3:   Product (every product, with price and weight) { inStock shippingEstimate }
//
// Every alias is one _entities fetch: one path of the query whose entities
// the wave resolves (see plan.go for which path each alias serves). Within a
// fetch the representations are deduplicated, and the answer for one
// representation fills every place in the tree where that entity occurs.
//
// The reviews schema owns User.reviews and Product.reviews, and Review.author
// provides username, so one request in wave 2 resolves the query's whole
// nesting of reviews, as a planner that stays in one source schema while it
// can does. Inventory's shippingEstimate requires price and weight, which
// products owns, so inventory comes last. That makes six source schema
// requests per gateway request, four of them in parallel pairs.
//
// A source schema that fails (transport error, a status other than 200, an
// answer that is not JSON, GraphQL errors) fails the gateway request with 502:
// the benchmark counts it as an error instead of measuring partial answers.
package benchgw
