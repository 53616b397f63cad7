package schemas

// productsSubgraphSDL is what products answers to _service { sdl }.
const productsSubgraphSDL = `type Query {
  topProducts(first: Int = 5): [Product]
}

type Product @key(fields: "upc") {
  upc: String!
  name: String
  price: Int
  weight: Int
}
`

// productsSchema is the executable schema of products.
const productsSchema = `
schema { query: Query }
type Query {
  topProducts(first: Int = 5): [Product]
  _service: _Service!
  _entities(representations: [_Any!]!): [_Entity]!
}
type Product @key(fields: "upc") {
  upc: String!
  name: String
  price: Int
  weight: Int
}
union _Entity = Product
` + federationSDL

type productsQuery struct{}

// TopProducts returns the first products in catalogue order; a negative
// count behaves like zero.
func (productsQuery) TopProducts(args struct{ First int32 }) *[]*productsProduct {
	n := min(max(int(args.First), 0), len(products))
	out := make([]*productsProduct, n)
	for i := range n {
		out[i] = &productsProduct{&products[i]}
	}
	return &out
}

func (productsQuery) Service() service { return service{productsSubgraphSDL} }

func (productsQuery) Entities(args entitiesArgs) []*productsEntity {
	out := make([]*productsEntity, len(args.Representations))
	for i, rep := range args.Representations {
		if rep.typename() != "Product" {
			continue
		}
		if upc, ok := rep.key("upc"); ok {
			if p := findProduct(upc); p != nil {
				out[i] = &productsEntity{&productsProduct{p}}
			}
		}
	}
	return out
}

type productsEntity struct{ product *productsProduct }

func (e *productsEntity) ToProduct() (*productsProduct, bool) { return e.product, e.product != nil }

type productsProduct struct{ p *productRecord }

func (p *productsProduct) Upc() string    { return p.p.upc }
func (p *productsProduct) Name() *string  { return &p.p.name }
func (p *productsProduct) Price() *int32  { return &p.p.price }
func (p *productsProduct) Weight() *int32 { return &p.p.weight }
