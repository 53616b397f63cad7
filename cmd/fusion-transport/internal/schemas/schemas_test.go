package schemas

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start starts the servers and a client of their own for one test; cleanup
// drops the client's idle connections and closes the servers.
func start(t *testing.T, opts Options) (*Servers, *http.Client) {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return s, &http.Client{Transport: tr}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, c *http.Client, method, target, body string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestRequests(t *testing.T) {
	s, c := start(t, Options{})
	tests := []struct {
		name     string
		schema   string
		method   string // POST if empty
		body     string
		header   map[string]string
		status   int
		want     string   // the exact body, if set
		contains []string // parts of the body, otherwise
		absent   []string // parts the body must not have
		media    string   // the Content-Type; application/json if empty
	}{
		{
			name:   "users",
			schema: "accounts",
			body:   `{"query":"{ users { id username } }"}`,
			want:   `{"data":{"users":[{"id":"1","username":"urigo"},{"id":"2","username":"dotansimha"},{"id":"3","username":"kamilkisiela"},{"id":"4","username":"ardatan"},{"id":"5","username":"gilgardosh"},{"id":"6","username":"laurin"}]}}`,
		},
		{
			name:   "user by id variable",
			schema: "accounts",
			body:   `{"query":"query U($id: ID!) { user(id: $id) { name birthday } }","variables":{"id":"4"}}`,
			want:   `{"data":{"user":{"name":"Arda Tanrikulu","birthday":1234567890}}}`,
		},
		{
			name:   "topProducts default",
			schema: "products",
			body:   `{"query":"{ topProducts { upc } }"}`,
			want:   `{"data":{"topProducts":[{"upc":"1"},{"upc":"2"},{"upc":"3"},{"upc":"4"},{"upc":"5"}]}}`,
		},
		{
			name:   "topProducts first",
			schema: "products",
			body:   `{"query":"{ topProducts(first: 2) { upc name price weight } }"}`,
			want:   `{"data":{"topProducts":[{"upc":"1","name":"Table","price":899,"weight":100},{"upc":"2","name":"Couch","price":1299,"weight":1000}]}}`,
		},
		{
			name:   "topProducts first beyond the catalogue",
			schema: "products",
			body:   `{"query":"query($n: Int) { topProducts(first: $n) { name } }","variables":{"n":100}}`,
			want:   `{"data":{"topProducts":[{"name":"Table"},{"name":"Couch"},{"name":"Glass"},{"name":"Chair"},{"name":"TV"},{"name":"Lamp"},{"name":"Grill"},{"name":"Fridge"},{"name":"Sofa"}]}}`,
		},
		{
			name:   "topProducts first zero",
			schema: "products",
			body:   `{"query":"{ topProducts(first: 0) { upc } }"}`,
			want:   `{"data":{"topProducts":[]}}`,
		},
		{
			name:   "operationName selects",
			schema: "products",
			body:   `{"query":"query A { topProducts(first: 1) { upc } } query B { topProducts(first: 1) { name } }","operationName":"B"}`,
			want:   `{"data":{"topProducts":[{"name":"Table"}]}}`,
		},
		{
			name:   "accounts entities",
			schema: "accounts",
			body:   `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on User { id name } } }","variables":{"r":[{"__typename":"User","id":"2"},{"__typename":"User","id":"99"},{"__typename":"Product","upc":"1"}]}}`,
			want:   `{"data":{"_entities":[{"__typename":"User","id":"2","name":"Dotan Simha"},null,null]}}`,
		},
		{
			name:   "products entities inline",
			schema: "products",
			body:   `{"query":"{ _entities(representations: [{__typename: \"Product\", upc: \"3\"}, {__typename: \"Product\", upc: 8}]) { ... on Product { upc name price weight } } }"}`,
			want:   `{"data":{"_entities":[{"upc":"3","name":"Glass","price":15,"weight":20},{"upc":"8","name":"Fridge","price":100000,"weight":6000}]}}`,
		},
		{
			name:   "reviews entities",
			schema: "reviews",
			body:   `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Review { id author { id username } product { upc } } ... on User { id reviews { id } } ... on Product { upc reviews { id } } } }","variables":{"r":[{"__typename":"Review","id":"4"},{"__typename":"User","id":"2"},{"__typename":"Product","upc":"1"},{"__typename":"Review","id":"404"},{"__typename":"Nope","id":"1"}]}}`,
			want:   `{"data":{"_entities":[{"__typename":"Review","id":"4","author":{"id":"4","username":"ardatan"},"product":{"upc":"2"}},{"__typename":"User","id":"2","reviews":[{"id":"2"},{"id":"8"}]},{"__typename":"Product","upc":"1","reviews":[{"id":"1"},{"id":"2"},{"id":"3"}]},null,null]}}`,
		},
		{
			name:   "inventory entities require price and weight",
			schema: "inventory",
			body:   `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { upc inStock shippingEstimate } } }","variables":{"r":[{"__typename":"Product","upc":"1","price":899,"weight":100},{"__typename":"Product","upc":"2","price":1299,"weight":1000},{"__typename":"Product","upc":"3"},{"__typename":"Product","upc":"10","price":1,"weight":1}]}}`,
			want:   `{"data":{"_entities":[{"upc":"1","inStock":true,"shippingEstimate":50},{"upc":"2","inStock":false,"shippingEstimate":0},{"upc":"3","inStock":false,"shippingEstimate":null},null]}}`,
		},
		{
			name:   "me without authorization",
			schema: "accounts",
			body:   `{"query":"{ me { id name } }"}`,
			want:   `{"data":{"me":null}}`,
		},
		{
			name:   "me with authorization",
			schema: "accounts",
			body:   `{"query":"{ me { id name } }"}`,
			header: map[string]string{"Authorization": "Bearer 3"},
			want:   `{"data":{"me":{"id":"3","name":"Kamil Kisiela"}}}`,
		},
		{
			name:   "me with an unknown token",
			schema: "accounts",
			body:   `{"query":"{ me { id } }"}`,
			header: map[string]string{"Authorization": "Bearer 42"},
			want:   `{"data":{"me":null}}`,
		},
		{
			name:   "request batching",
			schema: "products",
			body:   `[{"query":"{ topProducts(first: 1) { upc } }"},{"query":"query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { name } } }","variables":{"r":[{"__typename":"Product","upc":"9"}]}},{"query":5}]`,
			want:   `[{"data":{"topProducts":[{"upc":"1"}]}},{"data":{"_entities":[{"name":"Sofa"}]}},{"errors":[{"message":"the query must be a string"}]}]`,
		},
		{
			name:   "variable batching",
			schema: "accounts",
			body:   `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { ... on User { username } } }","variables":[{"r":[{"__typename":"User","id":"1"}]},{"r":[{"__typename":"User","id":"5"},{"__typename":"User","id":"6"}]}]}`,
			want:   `[{"data":{"_entities":[{"username":"urigo"}]}},{"data":{"_entities":[{"username":"gilgardosh"},{"username":"laurin"}]}}]`,
		},
		{
			name:   "alias batching",
			schema: "inventory",
			body:   `{"query":"query($a: [_Any!]!, $b: [_Any!]!) { a: _entities(representations: $a) { ... on Product { inStock } } b: _entities(representations: $b) { ... on Product { shippingEstimate } } }","variables":{"a":[{"__typename":"Product","upc":"5"}],"b":[{"__typename":"Product","upc":"4","price":499,"weight":100}]}}`,
			want:   `{"data":{"a":[{"inStock":true}],"b":[{"shippingEstimate":50}]}}`,
		},
		{
			name:     "unknown field",
			schema:   "accounts",
			body:     `{"query":"{ users { id shoeSize } }"}`,
			contains: []string{`{"errors":[{"message":"Cannot query field \"shoeSize\" on type \"User\".","locations":[`},
			absent:   []string{`"data"`},
		},
		{
			name:     "wrong variable type",
			schema:   "products",
			body:     `{"query":"query($n: Int) { topProducts(first: $n) { upc } }","variables":{"n":"five"}}`,
			contains: []string{`"errors":[{"message":"could not unmarshal \"five\"`},
		},
		{
			name:     "missing required variable",
			schema:   "accounts",
			body:     `{"query":"query($id: ID!) { user(id: $id) { name } }"}`,
			contains: []string{`{"errors":[{"message":`},
			absent:   []string{`"data"`},
		},
		{
			name:     "graphql-response media type",
			schema:   "accounts",
			body:     `{"query":"{ nope }"}`,
			header:   map[string]string{"Accept": "application/graphql-response+json, application/json;q=0.9"},
			status:   http.StatusBadRequest,
			contains: []string{`{"errors":[`},
			media:    "application/graphql-response+json; charset=utf-8",
		},
		{
			name:   "graphql-response media type success",
			schema: "products",
			body:   `{"query":"{ topProducts(first: 1) { upc } }"}`,
			header: map[string]string{"Accept": "application/graphql-response+json"},
			want:   `{"data":{"topProducts":[{"upc":"1"}]}}`,
			media:  "application/graphql-response+json; charset=utf-8",
		},
		{
			name:     "malformed JSON",
			schema:   "reviews",
			body:     `{"query": "{ _service { sdl } }"`,
			status:   http.StatusBadRequest,
			contains: []string{`{"errors":[{"message":"the request body is not valid JSON`},
		},
		{
			name:   "whitespace around the body",
			schema: "products",
			body:   "\n\t {\"query\":\"{ topProducts(first: 1) { upc } }\"} \n",
			want:   `{"data":{"topProducts":[{"upc":"1"}]}}`,
		},
		{
			name:   "empty body",
			schema: "products",
			body:   "",
			status: http.StatusBadRequest,
			want:   `{"errors":[{"message":"the request body is not valid JSON: unexpected end of JSON input"}]}`,
		},
		{
			name:   "query not a string",
			schema: "reviews",
			body:   `{"query": 5}`,
			status: http.StatusBadRequest,
			want:   `{"errors":[{"message":"the query must be a string"}]}`,
		},
		{
			name:   "no query",
			schema: "reviews",
			body:   `{"variables": {}}`,
			status: http.StatusBadRequest,
			want:   `{"errors":[{"message":"the request has no query"}]}`,
		},
		{
			name:   "empty batch",
			schema: "reviews",
			body:   `[]`,
			status: http.StatusBadRequest,
			want:   `{"errors":[{"message":"the request batch is empty"}]}`,
		},
		{
			name:   "variables of the wrong kind",
			schema: "reviews",
			body:   `{"query":"{ _service { sdl } }","variables":"x"}`,
			status: http.StatusBadRequest,
			want:   `{"errors":[{"message":"the variables must be an object or an array of objects"}]}`,
		},
		{
			name:   "GET",
			schema: "products",
			method: http.MethodGet,
			body:   "?query=" + url.QueryEscape(`query($n: Int) { topProducts(first: $n) { upc } }`) + "&variables=" + url.QueryEscape(`{"n":1}`),
			want:   `{"data":{"topProducts":[{"upc":"1"}]}}`,
		},
		{
			name:   "PUT",
			schema: "products",
			method: http.MethodPut,
			body:   `{"query":"{ topProducts { upc } }"}`,
			status: http.StatusMethodNotAllowed,
			want:   `{"errors":[{"message":"method PUT not allowed: use POST or GET"}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, target, body := tt.method, s.URLs[tt.schema], tt.body
			if method == "" {
				method = http.MethodPost
			}
			if method == http.MethodGet {
				target, body = target+body, ""
			}
			got := send(t, c, method, target, body, tt.header)
			wantStatus := tt.status
			if wantStatus == 0 {
				wantStatus = http.StatusOK
			}
			if got.status != wantStatus {
				t.Errorf("status = %d, want %d (body %s)", got.status, wantStatus, got.body)
			}
			wantMedia := tt.media
			if wantMedia == "" {
				wantMedia = "application/json; charset=utf-8"
			}
			if ct := got.header.Get("Content-Type"); ct != wantMedia {
				t.Errorf("Content-Type = %q, want %q", ct, wantMedia)
			}
			if !json.Valid([]byte(got.body)) {
				t.Errorf("body is not JSON: %s", got.body)
			}
			if tt.want != "" && got.body != tt.want {
				t.Errorf("body mismatch\n got: %s\nwant: %s", got.body, tt.want)
			}
			for _, part := range tt.contains {
				if !strings.Contains(got.body, part) {
					t.Errorf("body lacks %s\nbody: %s", part, got.body)
				}
			}
			for _, part := range tt.absent {
				if strings.Contains(got.body, part) {
					t.Errorf("body has %s\nbody: %s", part, got.body)
				}
			}
		})
	}
}

func TestServiceSDL(t *testing.T) {
	s, c := start(t, Options{})
	wantParts := map[string][]string{
		"accounts":  {`type User @key(fields: "id")`, "users: [User]", "me: User"},
		"inventory": {`extend type Product @key(fields: "upc")`, `shippingEstimate: Int @requires(fields: "price weight")`},
		"products":  {`type Product @key(fields: "upc")`, "topProducts(first: Int = 5): [Product]"},
		"reviews":   {`type Review @key(fields: "id")`, `extend type User @key(fields: "id")`, `extend type Product @key(fields: "upc")`},
	}
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			got := send(t, c, http.MethodPost, s.URLs[name], `{"query":"{ _service { sdl } }"}`, nil)
			var res struct {
				Data struct {
					Service struct{ SDL string } `json:"_service"`
				}
			}
			if err := json.Unmarshal([]byte(got.body), &res); err != nil {
				t.Fatalf("decoding %s: %v", got.body, err)
			}
			if res.Data.Service.SDL == "" {
				t.Fatalf("empty sdl: %s", got.body)
			}
			for _, part := range wantParts[name] {
				if !strings.Contains(res.Data.Service.SDL, part) {
					t.Errorf("sdl lacks %q:\n%s", part, res.Data.Service.SDL)
				}
			}
		})
	}
}

// TestDeterministic sends the same requests twice, to two sets of servers,
// and wants the same status, headers and bytes.
func TestDeterministic(t *testing.T) {
	s1, c1 := start(t, Options{})
	s2, c2 := start(t, Options{})
	bodies := map[string]string{
		"accounts":  `[{"query":"{ users { id name username birthday } }"},{"query":"{ me { id } }"}]`,
		"inventory": `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { upc inStock shippingEstimate } } }","variables":[{"r":[{"__typename":"Product","upc":"1","price":899,"weight":100}]},{"r":[{"__typename":"Product","upc":"7","price":3999,"weight":2000}]}]}`,
		"products":  `{"query":"{ topProducts(first: 9) { upc name price weight } x: topProducts { upc } }"}`,
		"reviews":   `{"query":"{ _entities(representations: [{__typename: \"Product\", upc: \"1\"}, {__typename: \"User\", id: \"3\"}]) { ... on Product { reviews { id body author { id username reviews { id body product { upc } } } } } ... on User { reviews { id body } } } }"}`,
	}
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			first := send(t, c1, http.MethodPost, s1.URLs[name], bodies[name], map[string]string{"Authorization": "Bearer 1"})
			for i, c := range []*http.Client{c1, c2} {
				u := []string{s1.URLs[name], s2.URLs[name]}[i]
				again := send(t, c, http.MethodPost, u, bodies[name], map[string]string{"Authorization": "Bearer 1"})
				if again.status != first.status || again.body != first.body {
					t.Errorf("answer %d differs:\n%d %s\n%d %s", i+2, first.status, first.body, again.status, again.body)
				}
				if !equalHeaders(first.header, again.header) {
					t.Errorf("headers %d differ: %v, %v", i+2, first.header, again.header)
				}
			}
			if first.header.Get("Date") != "" {
				t.Errorf("Date header present: %v", first.header)
			}
			if strings.Contains(first.body, `"errors"`) {
				t.Errorf("errors in %s", first.body)
			}
		})
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// TestDeepRecursionWaves replays the fetches a gateway makes for the
// benchmark's deep-recursion query, wave by wave, and wants every entity
// resolved by the schema that owns its fields.
func TestDeepRecursionWaves(t *testing.T) {
	s, c := start(t, Options{})
	post := func(schema string, query string, vars map[string]any) map[string]any {
		t.Helper()
		body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
		if err != nil {
			t.Fatal(err)
		}
		got := send(t, c, http.MethodPost, s.URLs[schema], string(body), nil)
		var res struct {
			Data   map[string]any
			Errors []any
		}
		if err := json.Unmarshal([]byte(got.body), &res); err != nil {
			t.Fatalf("%s: decoding %s: %v", schema, got.body, err)
		}
		if got.status != http.StatusOK || len(res.Errors) > 0 || res.Data == nil {
			t.Fatalf("%s: %d %s", schema, got.status, got.body)
		}
		return res.Data
	}
	entities := func(data map[string]any) []map[string]any {
		t.Helper()
		list, _ := data["_entities"].([]any)
		out := make([]map[string]any, len(list))
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				t.Fatalf("entity %d is %v", i, e)
			}
			out[i] = m
		}
		return out
	}

	// Wave 1: the root fields.
	rootUsers := post("accounts", `{ users { __typename id username name } }`, nil)["users"].([]any)
	top := post("products", `{ topProducts { __typename upc name price weight } }`, nil)["topProducts"].([]any)
	if len(rootUsers) != len(users) || len(top) != 5 {
		t.Fatalf("wave 1: %d users, %d top products", len(rootUsers), len(top))
	}

	// Wave 2: reviews for the users and the top products, with the whole
	// reviews-owned subtree.
	const reviewSubtree = `reviews { id body product { __typename upc reviews { id body author { __typename id username reviews { id body product { __typename upc } } } } } }`
	var userReps, productReps []any
	for _, u := range rootUsers {
		userReps = append(userReps, map[string]any{"__typename": "User", "id": u.(map[string]any)["id"]})
	}
	for _, p := range top {
		productReps = append(productReps, map[string]any{"__typename": "Product", "upc": p.(map[string]any)["upc"]})
	}
	wave2 := post("reviews", `query($u: [_Any!]!, $p: [_Any!]!) {
		u: _entities(representations: $u) { ... on User { `+reviewSubtree+` } }
		p: _entities(representations: $p) { ... on Product { reviews { id body author { __typename id username reviews { id body product { __typename upc } } } } } }
	}`, map[string]any{"u": userReps, "p": productReps})

	// Collect the products and authors the reviews named.
	upcs, authors := map[string]bool{}, map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			switch v["__typename"] {
			case "Product":
				upcs[v["upc"].(string)] = true
			case "User":
				authors[v["id"].(string)] = true
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(wave2)
	if len(upcs) != len(products) || len(authors) != len(users) {
		t.Fatalf("wave 2 named %d products and %d authors", len(upcs), len(authors))
	}

	// Wave 3: product and user fields for them.
	var reps3p, reps3u []any
	for _, p := range products {
		if upcs[p.upc] {
			reps3p = append(reps3p, map[string]any{"__typename": "Product", "upc": p.upc})
		}
	}
	for _, u := range users {
		if authors[u.id] {
			reps3u = append(reps3u, map[string]any{"__typename": "User", "id": u.id})
		}
	}
	wave3p := entities(post("products", `query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { upc name price weight } } }`, map[string]any{"r": reps3p}))
	wave3u := entities(post("accounts", `query($r: [_Any!]!) { _entities(representations: $r) { ... on User { id name } } }`, map[string]any{"r": reps3u}))
	if len(wave3p) != len(products) || len(wave3u) != len(users) {
		t.Fatalf("wave 3: %d products, %d users", len(wave3p), len(wave3u))
	}

	// Wave 4: inventory, with the price and weight it requires.
	var reps4 []any
	for _, p := range wave3p {
		reps4 = append(reps4, map[string]any{"__typename": "Product", "upc": p["upc"], "price": p["price"], "weight": p["weight"]})
	}
	wave4 := entities(post("inventory", `query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { upc inStock shippingEstimate } } }`, map[string]any{"r": reps4}))
	for i, p := range wave4 {
		if p["inStock"] == nil || p["shippingEstimate"] == nil {
			t.Errorf("inventory entity %d incomplete: %v", i, p)
		}
	}
}

func TestData(t *testing.T) {
	if n := len(reviews); n < 10 || n > 15 {
		t.Errorf("%d reviews, want about a dozen", n)
	}
	for _, r := range reviews {
		if n := len(r.body); n < 150 || n > 1000 {
			t.Errorf("review %s: body of %d bytes, want 150 to 1000", r.id, n)
		}
		if findUser(r.authorID) == nil || findProduct(r.upc) == nil {
			t.Errorf("review %s: unknown author %q or product %q", r.id, r.authorID, r.upc)
		}
	}
	for _, p := range products {
		n := len(reviewsBy(func(r *reviewRecord) bool { return r.upc == p.upc }))
		if n < 1 || n > 4 {
			t.Errorf("product %s has %d reviews, want 1 to 4", p.upc, n)
		}
	}
	if again := buildReviews(); !equalReviews(again, reviews) {
		t.Error("buildReviews is not deterministic")
	}
}

func equalReviews(a, b []reviewRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHandlerUnknown(t *testing.T) {
	_, err := Handler("payments", Options{})
	if err == nil || !strings.Contains(err.Error(), `"payments"`) {
		t.Fatalf("Handler(payments) error = %v, want one naming it", err)
	}
	for _, name := range Names {
		if _, err := Handler(name, Options{}); err != nil {
			t.Errorf("Handler(%s): %v", name, err)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct{ header, want string }{
		{"", ""},
		{"Bearer 1", "1"},
		{"bearer  2 ", "2"},
		{"Basic dXNlcg==", ""},
		{"Bearer", ""},
	} {
		if got := bearerToken(withBearerToken(context.Background(), tt.header)); got != tt.want {
			t.Errorf("token of %q = %q, want %q", tt.header, got, tt.want)
		}
	}
}

// TestHandlerDirect serves a handler without Start, as a command mounting
// it elsewhere would.
func TestHandlerDirect(t *testing.T) {
	h, err := Handler("inventory", Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req, err := http.NewRequest(http.MethodPost, "/anywhere", strings.NewReader(`{"query":"{ _entities(representations: [{__typename: \"Product\", upc: \"6\", price: 6999, weight: 300}]) { ... on Product { inStock shippingEstimate } } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	h.ServeHTTP(rec, req)
	if want := `{"data":{"_entities":[{"inStock":true,"shippingEstimate":0}]}}`; rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("got %d %s, want 200 %s", rec.Code, rec.Body.String(), want)
	}
}
