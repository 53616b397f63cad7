package respcache

// A stand-in for policy.go (helper cache-policy); removed at its merge.

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

type Policy struct {
	MaxEntryBytes int
	DefaultTTL    time.Duration
	MaxTTL        time.Duration
	Shared        bool
	Vary          []string
}

type Request struct{ NoStore, NoCache bool }

func ParseRequest(h http.Header) Request {
	cc := strings.ToLower(strings.Join(h.Values("Cache-Control"), ","))
	return Request{NoStore: strings.Contains(cc, "no-store"), NoCache: strings.Contains(cc, "no-cache")}
}

type Plan struct {
	Store                              bool
	Reason                             string
	Lifetime, InitialAge               time.Duration
	Shared                             bool
	VaryNames                          []string
	StaleWhileRevalidate, StaleIfError time.Duration
	Tags                               []string
}

func (p Policy) Plan(resp *http.Response) Plan {
	if resp.StatusCode != 200 {
		return Plan{Reason: "status"}
	}
	cc := strings.ToLower(strings.Join(resp.Header.Values("Cache-Control"), ","))
	if strings.Contains(cc, "no-store") || strings.Contains(cc, "no-cache") {
		return Plan{Reason: "no-store"}
	}
	var life time.Duration
	for _, d := range strings.Split(cc, ",") {
		d = strings.TrimSpace(d)
		if v, ok := strings.CutPrefix(d, "max-age="); ok {
			n, _ := strconv.Atoi(v)
			life = time.Duration(n) * time.Second
		}
	}
	if life <= 0 {
		life = p.DefaultTTL
	}
	if life <= 0 {
		return Plan{Reason: "no-lifetime"}
	}
	life = min(life, p.MaxTTL)
	shared := p.Shared && strings.Contains(cc, "public") && !strings.Contains(cc, "private")
	var names []string
	if shared {
		names = append(names, p.Vary...)
		for _, v := range resp.Header.Values("Vary") {
			for n := range strings.SplitSeq(v, ",") {
				names = append(names, http.CanonicalHeaderKey(strings.TrimSpace(n)))
			}
		}
	}
	return Plan{Store: true, Lifetime: life, Shared: shared, VaryNames: names}
}

func CheckBody(body []byte) (tags []string, ok bool) {
	return nil, !strings.Contains(string(body), `"errors":[{`)
}
