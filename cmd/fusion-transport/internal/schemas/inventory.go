package schemas

// inventorySubgraphSDL is what inventory answers to _service { sdl }.
const inventorySubgraphSDL = `extend type Product @key(fields: "upc") {
  upc: String! @external
  weight: Int @external
  price: Int @external
  inStock: Boolean
  shippingEstimate: Int @requires(fields: "price weight")
}
`

// inventorySchema is the executable schema of inventory; see reviewsSchema
// for why Product is not an extension here.
const inventorySchema = `
schema { query: Query }
type Query {
  _service: _Service!
  _entities(representations: [_Any!]!): [_Entity]!
}
type Product @key(fields: "upc") @extends {
  upc: String! @external
  weight: Int @external
  price: Int @external
  inStock: Boolean
  shippingEstimate: Int @requires(fields: "price weight")
}
union _Entity = Product
` + federationSDL

type inventoryQuery struct{}

func (inventoryQuery) Service() service { return service{inventorySubgraphSDL} }

// Entities resolves the products inventory stocks (null for an unknown upc),
// taking price and weight, which shippingEstimate requires, from the
// representation.
func (inventoryQuery) Entities(args entitiesArgs) []*inventoryEntity {
	out := make([]*inventoryEntity, len(args.Representations))
	for i, rep := range args.Representations {
		if rep.typename() != "Product" {
			continue
		}
		upc, ok := rep.key("upc")
		if !ok {
			continue
		}
		rec := findProduct(upc)
		if rec == nil {
			continue
		}
		p := &inventoryProduct{upc: upc, inStock: rec.inStock}
		if v, ok := rep.integer("price"); ok {
			p.price = &v
		}
		if v, ok := rep.integer("weight"); ok {
			p.weight = &v
		}
		out[i] = &inventoryEntity{p}
	}
	return out
}

type inventoryEntity struct{ product *inventoryProduct }

func (e *inventoryEntity) ToProduct() (*inventoryProduct, bool) { return e.product, e.product != nil }

type inventoryProduct struct {
	upc           string
	price, weight *int32
	inStock       bool
}

func (p *inventoryProduct) Upc() string    { return p.upc }
func (p *inventoryProduct) Price() *int32  { return p.price }
func (p *inventoryProduct) Weight() *int32 { return p.weight }
func (p *inventoryProduct) InStock() *bool { return &p.inStock }

// ShippingEstimate is free above a price of 1000 and otherwise half the
// weight, as in the benchmark; null when the representation lacked what it
// needs.
func (p *inventoryProduct) ShippingEstimate() *int32 {
	switch {
	case p.price == nil:
		return nil
	case *p.price > 1000:
		return int32Ptr(0)
	case p.weight == nil:
		return nil
	default:
		return int32Ptr(*p.weight / 2)
	}
}
