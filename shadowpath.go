package transport

import (
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/shadow"
)

// WithShadowPublisher sets where shadow comparison reports mismatches and
// counts (FUSION_SOCKETS_TRANSPORT=shadow). Default: a shadow.LogPublisher
// on the invoker's logger. Combine several with shadow.Multi.
func WithShadowPublisher(p shadow.Publisher) Option {
	return func(o *options) { o.shadowPublisher = p }
}

// WithShadowRules sets what shadow comparison leaves out and how it
// compares a source schema's answers. Default: the zero compare.Rules.
func WithShadowRules(r compare.Rules) Option {
	return func(o *options) { o.shadowRules = r }
}

// newShadow builds both paths over every source schema: legacy serves,
// sockets is compared on a sample of queries.
func newShadow(cfg env.Config, build func(env.Config, env.Path) (Invoker, error), o *options) (Invoker, error) {
	primary, err := build(cfg, env.PathLegacy)
	if err != nil {
		return nil, err
	}
	candidate, err := build(cfg, env.PathSockets)
	if err != nil {
		primary.Close()
		return nil, err
	}
	sh := cfg.EffectiveShadow()
	pub := o.shadowPublisher
	if pub == nil {
		pub = shadow.LogPublisher{Logger: o.log()}
	}
	return shadow.New(primary, candidate, shadow.Options{
		Rate:          sh.Rate,
		MaxConcurrent: sh.MaxConcurrent,
		MaxBodyBytes:  sh.MaxBodyBytes,
		Timeout:       sh.Timeout,
		Rules:         o.shadowRules,
		Publisher:     pub,
	}), nil
}
