package benchrun

import "fmt"

// Subgraphs names the source schemas a run's gateways call.
type Subgraphs string

const (
	// SubgraphsReplay serves the embedded schemas' recorded answers to the
	// benchmark gateway's requests (fusion-transport schemas -replay): they
	// cost next to nothing, so the gateway sets the throughput.
	SubgraphsReplay Subgraphs = "replay"
	// SubgraphsSchemas runs the embedded schemas (graphql-go), which cost
	// about twice the gateway's CPU per request.
	SubgraphsSchemas Subgraphs = "schemas"
)

// ParseSubgraphs parses "replay" or "schemas".
func ParseSubgraphs(s string) (Subgraphs, error) {
	switch Subgraphs(s) {
	case SubgraphsReplay, SubgraphsSchemas:
		return Subgraphs(s), nil
	}
	return "", fmt.Errorf("unknown subgraphs %q: want %s or %s", s, SubgraphsReplay, SubgraphsSchemas)
}

// Describe says in a sentence which source schemas ran, for the table.
func (s Subgraphs) Describe() string {
	if s == SubgraphsSchemas {
		return "Source schemas: the embedded schemas (graphql-go), executing every request (-subgraphs schemas)."
	}
	return "Source schemas: replay, the embedded schemas' recorded answers looked up by request body, byte for byte (-subgraphs replay)."
}

// subgraphs returns o.Subgraphs or its default, replay.
func (o Options) subgraphs() Subgraphs {
	if o.Subgraphs == "" {
		return SubgraphsReplay
	}
	return o.Subgraphs
}
