package schemas

import graphql "github.com/graph-gophers/graphql-go"

// reviewsSubgraphSDL is what reviews answers to _service { sdl }. As in the
// benchmark, Review.author provides the username, so the reviews schema keeps
// a copy of the usernames.
const reviewsSubgraphSDL = `type Review @key(fields: "id") {
  id: ID!
  body: String
  author: User @provides(fields: "username")
  product: Product
}

extend type User @key(fields: "id") {
  id: ID! @external
  username: String @external
  reviews: [Review]
}

extend type Product @key(fields: "upc") {
  upc: String! @external
  reviews: [Review]
}
`

// reviewsSchema is the executable schema of reviews. graphql-go cannot
// extend a type it has not seen, so User and Product are plain definitions
// here; the SDL above is the federated view of the same fields.
const reviewsSchema = `
schema { query: Query }
type Query {
  _service: _Service!
  _entities(representations: [_Any!]!): [_Entity]!
}
type Review @key(fields: "id") {
  id: ID!
  body: String
  author: User @provides(fields: "username")
  product: Product
}
type User @key(fields: "id") @extends {
  id: ID! @external
  username: String @external
  reviews: [Review]
}
type Product @key(fields: "upc") @extends {
  upc: String! @external
  reviews: [Review]
}
union _Entity = Review | User | Product
` + federationSDL

type reviewsQuery struct{}

func (reviewsQuery) Service() service { return service{reviewsSubgraphSDL} }

// Entities resolves Review by its id (null if unknown) and, as an extending
// schema does, User and Product for any key: one without reviews has an
// empty list.
func (reviewsQuery) Entities(args entitiesArgs) []*reviewsEntity {
	out := make([]*reviewsEntity, len(args.Representations))
	for i, rep := range args.Representations {
		switch rep.typename() {
		case "Review":
			if id, ok := rep.key("id"); ok {
				if r := findReview(id); r != nil {
					out[i] = &reviewsEntity{review: &reviewsReview{r}}
				}
			}
		case "User":
			if id, ok := rep.key("id"); ok {
				u := &reviewsUser{id: id}
				if s, ok := rep.fields["username"].(string); ok {
					u.username = &s
				}
				out[i] = &reviewsEntity{user: u}
			}
		case "Product":
			if upc, ok := rep.key("upc"); ok {
				out[i] = &reviewsEntity{product: &reviewsProduct{upc: upc}}
			}
		}
	}
	return out
}

type reviewsEntity struct {
	review  *reviewsReview
	user    *reviewsUser
	product *reviewsProduct
}

func (e *reviewsEntity) ToReview() (*reviewsReview, bool)   { return e.review, e.review != nil }
func (e *reviewsEntity) ToUser() (*reviewsUser, bool)       { return e.user, e.user != nil }
func (e *reviewsEntity) ToProduct() (*reviewsProduct, bool) { return e.product, e.product != nil }

type reviewsReview struct{ r *reviewRecord }

func (r *reviewsReview) ID() graphql.ID { return graphql.ID(r.r.id) }
func (r *reviewsReview) Body() *string  { return &r.r.body }

// Author carries the username it provides.
func (r *reviewsReview) Author() *reviewsUser {
	u := &reviewsUser{id: r.r.authorID}
	if rec := findUser(r.r.authorID); rec != nil {
		u.username = &rec.username
	}
	return u
}

func (r *reviewsReview) Product() *reviewsProduct { return &reviewsProduct{upc: r.r.upc} }

// reviewsUser is a User as reviews sees it: its key, the username when a
// representation or a provided author carries it, and its reviews.
type reviewsUser struct {
	id       string
	username *string
}

func (u *reviewsUser) ID() graphql.ID    { return graphql.ID(u.id) }
func (u *reviewsUser) Username() *string { return u.username }
func (u *reviewsUser) Reviews() *[]*reviewsReview {
	return wrapReviews(reviewsBy(func(r *reviewRecord) bool { return r.authorID == u.id }))
}

type reviewsProduct struct{ upc string }

func (p *reviewsProduct) Upc() string { return p.upc }
func (p *reviewsProduct) Reviews() *[]*reviewsReview {
	return wrapReviews(reviewsBy(func(r *reviewRecord) bool { return r.upc == p.upc }))
}

func wrapReviews(rs []*reviewRecord) *[]*reviewsReview {
	out := make([]*reviewsReview, len(rs))
	for i, r := range rs {
		out[i] = &reviewsReview{r}
	}
	return &out
}
