package benchgw

// The response tree of the deep-recursion query. Each level of the query has
// its own type, so that every object encodes exactly the fields the query
// selects there, in the query's order; the source schema answers decode into
// the same types, and the later waves fill in the fields they own. A field
// that no answer filled encodes as null, as GraphQL answers a nullable field
// whose source failed to resolve it.

// response is the gateway's answer.
type response struct {
	Data responseData `json:"data"`
}

type responseData struct {
	Users       []*topUser         `json:"users"`
	TopProducts []*reviewedProduct `json:"topProducts"`
}

// topUser is users[]: ...User reviews.
type topUser struct {
	ID       string        `json:"id"`
	Username *string       `json:"username"`
	Name     *string       `json:"name"`
	Reviews  []*userReview `json:"reviews"`
}

// userReview is users[].reviews[]: ...Review product.
type userReview struct {
	ID      string           `json:"id"`
	Body    *string          `json:"body"`
	Product *reviewedProduct `json:"product"`
}

// productFields is the Product fragment: inStock name price shippingEstimate
// upc weight. products answers name, price and weight (and upc in wave 1),
// inventory inStock and shippingEstimate.
type productFields struct {
	InStock          *bool   `json:"inStock"`
	Name             *string `json:"name"`
	Price            *int    `json:"price"`
	ShippingEstimate *int    `json:"shippingEstimate"`
	UPC              string  `json:"upc"`
	Weight           *int    `json:"weight"`
}

// reviewedProduct is a product whose reviews the query asks for:
// topProducts[] and users[].reviews[].product.
type reviewedProduct struct {
	productFields
	Reviews []*productReview `json:"reviews"`
}

// productReview is a product's review: ...Review author.
type productReview struct {
	ID     string  `json:"id"`
	Body   *string `json:"body"`
	Author *author `json:"author"`
}

// author is a review's author: ...User reviews.
type author struct {
	ID       string          `json:"id"`
	Username *string         `json:"username"`
	Name     *string         `json:"name"`
	Reviews  []*authorReview `json:"reviews"`
}

// authorReview is an author's review: ...Review product, the innermost level.
type authorReview struct {
	ID      string         `json:"id"`
	Body    *string        `json:"body"`
	Product *productFields `json:"product"`
}

// The entity answers of waves 3 and 4, copied into the tree.

// productEntity is products' answer for ... on Product { name price weight }.
type productEntity struct {
	Name   *string `json:"name"`
	Price  *int    `json:"price"`
	Weight *int    `json:"weight"`
}

// userEntity is accounts' answer for ... on User { name }.
type userEntity struct {
	Name *string `json:"name"`
}

// stockEntity is inventory's answer for ... on Product { inStock
// shippingEstimate }.
type stockEntity struct {
	InStock          *bool `json:"inStock"`
	ShippingEstimate *int  `json:"shippingEstimate"`
}

// Representations sent to _entities.

type userRep struct {
	Typename string `json:"__typename"`
	ID       string `json:"id"`
}

type productRep struct {
	Typename string `json:"__typename"`
	UPC      string `json:"upc"`
}

// stockRep carries what inventory's shippingEstimate requires.
type stockRep struct {
	Typename string `json:"__typename"`
	UPC      string `json:"upc"`
	Price    *int   `json:"price,omitempty"`
	Weight   *int   `json:"weight,omitempty"`
}
