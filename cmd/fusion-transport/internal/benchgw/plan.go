package benchgw

import (
	"context"
	"errors"
)

// SourceSchemas names the source schemas the plan calls. A configuration
// for the gateway must name all of them.
var SourceSchemas = []string{"accounts", "inventory", "products", "reviews"}

// The wave-1 requests never change, so their bodies are built once. The
// invoker only reads a body, so concurrent requests share them.
var (
	usersRequest       = []byte(`{"query":"{ users { id username name } }"}`)
	topProductsRequest = []byte(`{"query":"{ topProducts { upc name price weight } }"}`)
)

// Selections of the wave-2 fetches: the whole nesting of reviews under a
// user and under a product, which the reviews schema resolves alone.
const (
	productReviewSelection = "reviews { id body author { id username reviews { id body product { upc } } } }"
	userReviewSelection    = "reviews { id body product { upc " + productReviewSelection + " } }"
)

// The answers of the aliased requests. An alias the request left out (its
// fetch had no entities) stays nil.
type (
	reviewsAnswer struct {
		U []*struct {
			Reviews []*userReview `json:"reviews"`
		} `json:"u"`
		P []*struct {
			Reviews []*productReview `json:"reviews"`
		} `json:"p"`
	}
	productsAnswer struct {
		P0 []*productEntity `json:"p0"`
		P1 []*productEntity `json:"p1"`
		P2 []*productEntity `json:"p2"`
	}
	accountsAnswer struct {
		A0 []*userEntity `json:"a0"`
		A1 []*userEntity `json:"a1"`
	}
	inventoryAnswer struct {
		I0 []*stockEntity `json:"i0"`
		I1 []*stockEntity `json:"i1"`
		I2 []*stockEntity `json:"i2"`
		I3 []*stockEntity `json:"i3"`
	}
)

// run runs the plan for one gateway request and returns the response tree.
func (x *execution) run(ctx context.Context) (*response, error) {
	res := new(response)
	data := &res.Data

	// Wave 1: the roots, from accounts and products at once.
	err := parallel(
		func() error {
			a, err := get[struct {
				Users []*topUser `json:"users"`
			}](ctx, x, "accounts", usersRequest)
			if err == nil {
				data.Users = a.Users
			}
			return err
		},
		func() error {
			a, err := get[struct {
				TopProducts []*reviewedProduct `json:"topProducts"`
			}](ctx, x, "products", topProductsRequest)
			if err == nil {
				data.TopProducts = a.TopProducts
			}
			return err
		},
	)
	if err != nil {
		return nil, err
	}

	// Wave 2: every review in the query, from reviews.
	var users group[topUser]
	for _, u := range data.Users {
		if u != nil {
			users.add(u.ID, u)
		}
	}
	var tops group[reviewedProduct]
	var topStock group[productFields] // i0: topProducts
	for _, p := range data.TopProducts {
		if p != nil {
			tops.add(p.UPC, p)
			topStock.add(p.UPC, &p.productFields)
		}
	}
	var fetches []entitiesFetch
	if !users.empty() {
		fetches = append(fetches, entitiesFetch{"u", "User", userReviewSelection, userReps(&users)})
	}
	if !tops.empty() {
		fetches = append(fetches, entitiesFetch{"p", "Product", productReviewSelection, productReps(&tops)})
	}
	if len(fetches) > 0 {
		a, err := getEntities[reviewsAnswer](ctx, x, "reviews", fetches)
		if err != nil {
			return nil, err
		}
		fill(&users, a.U, func(u *topUser, e *struct {
			Reviews []*userReview `json:"reviews"`
		}) {
			u.Reviews = e.Reviews
		})
		fill(&tops, a.P, func(p *reviewedProduct, e *struct {
			Reviews []*productReview `json:"reviews"`
		}) {
			p.Reviews = e.Reviews
		})
	}

	// Wave 3: the products and authors that the reviews point to, from
	// products and accounts at once.
	var (
		reviewed      group[productFields] // p0: users.reviews.product
		userDeep      group[productFields] // p1: users.reviews.product.reviews.author.reviews.product
		topDeep       group[productFields] // p2: topProducts.reviews.author.reviews.product
		userAuthors   group[author]        // a0: users.reviews.product.reviews.author
		topAuthors    group[author]        // a1: topProducts.reviews.author
		collectAuthor = func(authors *group[author], products *group[productFields], reviews []*productReview) {
			for _, r := range reviews {
				if r == nil || r.Author == nil {
					continue
				}
				authors.add(r.Author.ID, r.Author)
				for _, ar := range r.Author.Reviews {
					if ar != nil && ar.Product != nil {
						products.add(ar.Product.UPC, ar.Product)
					}
				}
			}
		}
	)
	for _, u := range data.Users {
		if u == nil {
			continue
		}
		for _, r := range u.Reviews {
			if r == nil || r.Product == nil {
				continue
			}
			reviewed.add(r.Product.UPC, &r.Product.productFields)
			collectAuthor(&userAuthors, &userDeep, r.Product.Reviews)
		}
	}
	for _, p := range data.TopProducts {
		if p != nil {
			collectAuthor(&topAuthors, &topDeep, p.Reviews)
		}
	}
	setProduct := func(p *productFields, e *productEntity) {
		p.Name, p.Price, p.Weight = e.Name, e.Price, e.Weight
	}
	setName := func(u *author, e *userEntity) { u.Name = e.Name }
	err = parallel(
		func() error {
			fetches := productFetches([]string{"p0", "p1", "p2"}, &reviewed, &userDeep, &topDeep)
			if len(fetches) == 0 {
				return nil
			}
			a, err := getEntities[productsAnswer](ctx, x, "products", fetches)
			if err != nil {
				return err
			}
			fill(&reviewed, a.P0, setProduct)
			fill(&userDeep, a.P1, setProduct)
			fill(&topDeep, a.P2, setProduct)
			return nil
		},
		func() error {
			var fetches []entitiesFetch
			for _, f := range []struct {
				alias string
				g     *group[author]
			}{{"a0", &userAuthors}, {"a1", &topAuthors}} {
				if !f.g.empty() {
					fetches = append(fetches, entitiesFetch{f.alias, "User", "name", userReps(f.g)})
				}
			}
			if len(fetches) == 0 {
				return nil
			}
			a, err := getEntities[accountsAnswer](ctx, x, "accounts", fetches)
			if err != nil {
				return err
			}
			fill(&userAuthors, a.A0, setName)
			fill(&topAuthors, a.A1, setName)
			return nil
		},
	)
	if err != nil {
		return nil, err
	}

	// Wave 4: stock and shipping of every product, from inventory, with the
	// price and weight that waves 1 and 3 brought.
	stock := []*group[productFields]{&topStock, &reviewed, &userDeep, &topDeep}
	aliases := []string{"i0", "i1", "i2", "i3"}
	fetches = fetches[:0]
	for i, s := range stock {
		if !s.empty() {
			fetches = append(fetches, entitiesFetch{aliases[i], "Product", "inStock shippingEstimate", stockReps(s)})
		}
	}
	if len(fetches) > 0 {
		a, err := getEntities[inventoryAnswer](ctx, x, "inventory", fetches)
		if err != nil {
			return nil, err
		}
		setStock := func(p *productFields, e *stockEntity) {
			p.InStock, p.ShippingEstimate = e.InStock, e.ShippingEstimate
		}
		for i, answers := range [][]*stockEntity{a.I0, a.I1, a.I2, a.I3} {
			fill(stock[i], answers, setStock)
		}
	}
	return res, nil
}

// productFetches builds the products fetches (name price weight) of the
// non-empty groups, aliased in order.
func productFetches(aliases []string, groups ...*group[productFields]) []entitiesFetch {
	var out []entitiesFetch
	for i, g := range groups {
		if !g.empty() {
			out = append(out, entitiesFetch{aliases[i], "Product", "name price weight", productReps(g)})
		}
	}
	return out
}

// parallel runs a on a goroutine of its own and b on this one, and returns
// their errors once both have ended.
func parallel(a, b func() error) error {
	done := make(chan error, 1)
	go func() { done <- a() }()
	errB := b()
	return errors.Join(<-done, errB)
}
