package schemas

import (
	"strconv"
	"strings"
)

// The demo data of the gateway benchmark's source schemas. Users and products
// (names, prices, weights, stock) are the ones of The Guild's
// graphql-gateways-benchmark (federation/subgraphs). The reviews are our own:
// the original has eleven reviews on four products, all by user 1, while the
// benchmark description asks for about a dozen reviews with 1 to 4 on every
// product, so the authors and products below spread them out evenly.

// userRecord is a user as the accounts schema knows it.
type userRecord struct {
	id       string
	name     string
	username string
	birthday int32
}

var users = []userRecord{
	{id: "1", name: "Uri Goldshtein", username: "urigo", birthday: 1234567890},
	{id: "2", name: "Dotan Simha", username: "dotansimha", birthday: 1234567890},
	{id: "3", name: "Kamil Kisiela", username: "kamilkisiela", birthday: 1234567890},
	{id: "4", name: "Arda Tanrikulu", username: "ardatan", birthday: 1234567890},
	{id: "5", name: "Gil Gardosh", username: "gilgardosh", birthday: 1234567890},
	{id: "6", name: "Laurin Quast", username: "laurin", birthday: 1234567890},
}

// productRecord is a product as the products and inventory schemas know it.
type productRecord struct {
	upc     string
	name    string
	price   int32
	weight  int32
	inStock bool
}

var products = []productRecord{
	{upc: "1", name: "Table", price: 899, weight: 100, inStock: true},
	{upc: "2", name: "Couch", price: 1299, weight: 1000, inStock: false},
	{upc: "3", name: "Glass", price: 15, weight: 20, inStock: false},
	{upc: "4", name: "Chair", price: 499, weight: 100, inStock: false},
	{upc: "5", name: "TV", price: 1299, weight: 1000, inStock: true},
	{upc: "6", name: "Lamp", price: 6999, weight: 300, inStock: true},
	{upc: "7", name: "Grill", price: 3999, weight: 2000, inStock: true},
	{upc: "8", name: "Fridge", price: 100000, weight: 6000, inStock: false},
	{upc: "9", name: "Sofa", price: 9999, weight: 800, inStock: true},
}

// reviewRecord is a review as the reviews schema knows it.
type reviewRecord struct {
	id       string
	body     string
	authorID string
	upc      string
}

// reviewPlan fixes, per review, its product and the length its body grows to;
// the author is assigned round robin so that every user wrote two or three.
var reviewPlan = []struct {
	upc    string
	length int
}{
	{"1", 420}, {"1", 290}, {"1", 265}, {"2", 150}, {"2", 980}, {"3", 300},
	{"4", 160}, {"4", 520}, {"5", 210}, {"6", 640}, {"7", 350}, {"8", 760},
	{"9", 190},
}

var reviews = buildReviews()

func buildReviews() []reviewRecord {
	out := make([]reviewRecord, len(reviewPlan))
	for i, p := range reviewPlan {
		out[i] = reviewRecord{
			id:       strconv.Itoa(i + 1),
			body:     filler(i, p.length),
			authorID: users[i%len(users)].id,
			upc:      p.upc,
		}
	}
	return out
}

// fillerWords is the vocabulary of the review bodies; no word is longer than
// 15 bytes, which keeps a body within its planned length plus 17.
var fillerWords = strings.Fields(`
	sturdy solid wobbly elegant plain finish grain oak walnut varnish delivery
	arrived promptly packaging damaged corner assembly instructions screws
	missing extra comfortable cushions fabric stains easily color matches
	photo exactly would recommend friends family value money price fair
	expensive cheap quality excellent decent average disappointing sturdy
	legs wobble slightly floor uneven kitchen living room bedroom office
	guests noticed compliments daily use after months still holds well
	customer service replied quickly replacement part shipped free warranty
	covers two years manual clear pictures helpful overall happy purchase
	again`)

// filler returns deterministic text of at least length bytes (and at most
// length plus one word and a full stop) made of fillerWords, arranged into
// sentences. seed
// picks where in the vocabulary the text starts and how it walks through it.
func filler(seed, length int) string {
	var b strings.Builder
	n := len(fillerWords)
	pos := (seed * 7) % n
	step := 3 + 2*(seed%5)
	words, sentences := 0, 0
	for b.Len() < length {
		w := fillerWords[pos]
		pos = (pos + step) % n
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if words == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		words++
		if words == 5+(seed+sentences)%8 {
			b.WriteByte('.')
			words = 0
			sentences++
		}
	}
	if words != 0 {
		b.WriteByte('.')
	}
	return b.String()
}

func findUser(id string) *userRecord {
	for i := range users {
		if users[i].id == id {
			return &users[i]
		}
	}
	return nil
}

func findProduct(upc string) *productRecord {
	for i := range products {
		if products[i].upc == upc {
			return &products[i]
		}
	}
	return nil
}

func findReview(id string) *reviewRecord {
	for i := range reviews {
		if reviews[i].id == id {
			return &reviews[i]
		}
	}
	return nil
}

// reviewsBy returns the reviews whose key (author or product) matches, in
// review order.
func reviewsBy(match func(*reviewRecord) bool) []*reviewRecord {
	var out []*reviewRecord
	for i := range reviews {
		if match(&reviews[i]) {
			out = append(out, &reviews[i])
		}
	}
	return out
}
