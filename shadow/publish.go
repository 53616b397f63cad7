package shadow

import (
	"context"
	"log/slog"

	"github.com/fusiongo/transport/answer"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Reasons a comparison is dropped.
const (
	DropBusy          = "busy"           // every comparison slot was taken
	DropTooLarge      = "too_large"      // a request or an answer exceeded MaxBodyBytes
	DropPrimaryUnread = "primary_unread" // the caller did not read the primary's body to the end in time
)

// Mismatch is one shadowed query whose answers differed.
type Mismatch struct {
	// Schema is the source schema's name.
	Schema string
	// Differences are what the Comparer found, never empty. Sensitive
	// headers are redacted in them (see Comparer).
	Differences []answer.Difference
	// PrimaryStatus and CandidateStatus are the two answers' status
	// codes; zero for a side that failed.
	PrimaryStatus, CandidateStatus int
}

// Publisher receives what a Shadow finds. Its methods are called from the
// comparison goroutines, concurrently; they must not block for long.
type Publisher interface {
	// Publish reports a mismatch.
	Publish(Mismatch)
	// Compared counts a comparison, equal or not, after Publish for a
	// mismatch.
	Compared(schema string, equal bool)
	// Dropped counts a sampled query that could not be compared.
	Dropped(schema, reason string)
}

// LogPublisher writes each mismatch as one log/slog record at Warn, and
// each dropped comparison at Debug.
type LogPublisher struct {
	// Logger receives the records. Nil: slog.Default().
	Logger *slog.Logger
}

func (p LogPublisher) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

// Publish logs the mismatch with one attribute group per difference.
func (p LogPublisher) Publish(m Mismatch) {
	attrs := []any{"source_schema", m.Schema, "legacy_status", m.PrimaryStatus, "sockets_status", m.CandidateStatus, "differences", len(m.Differences)}
	for i, d := range m.Differences {
		if i == 5 {
			attrs = append(attrs, "more", len(m.Differences)-i)
			break
		}
		attrs = append(attrs, slog.Group("difference", "kind", string(d.Kind), "path", d.Path, "explanation", d.Explanation))
	}
	p.logger().Warn("shadow mismatch", attrs...)
}

// Compared logs nothing.
func (p LogPublisher) Compared(string, bool) {}

// Dropped logs at Debug.
func (p LogPublisher) Dropped(schema, reason string) {
	p.logger().Debug("shadow comparison dropped", "source_schema", schema, "reason", reason)
}

// MetricsPublisher counts comparisons, mismatches by kind, and drops by
// reason through the OpenTelemetry metrics API:
//
//	fusion.transport.shadow.comparisons  {comparison}  fusion.source_schema, fusion.shadow.equal
//	fusion.transport.shadow.mismatches   {difference}  fusion.source_schema, fusion.shadow.kind
//	fusion.transport.shadow.dropped      {comparison}  fusion.source_schema, fusion.shadow.reason
type MetricsPublisher struct {
	comparisons, mismatches, dropped metric.Int64Counter
}

// NewMetricsPublisher creates the instruments on mp; nil means the global
// MeterProvider.
func NewMetricsPublisher(mp metric.MeterProvider) (*MetricsPublisher, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/fusiongo/transport/shadow")
	var p MetricsPublisher
	var err error
	if p.comparisons, err = m.Int64Counter("fusion.transport.shadow.comparisons", metric.WithUnit("{comparison}"), metric.WithDescription("Shadowed queries compared.")); err != nil {
		return nil, err
	}
	if p.mismatches, err = m.Int64Counter("fusion.transport.shadow.mismatches", metric.WithUnit("{difference}"), metric.WithDescription("Differences found between the legacy and the sockets answer, by kind.")); err != nil {
		return nil, err
	}
	if p.dropped, err = m.Int64Counter("fusion.transport.shadow.dropped", metric.WithUnit("{comparison}"), metric.WithDescription("Sampled queries that could not be compared, by reason.")); err != nil {
		return nil, err
	}
	return &p, nil
}

// Publish counts each difference by kind.
func (p *MetricsPublisher) Publish(m Mismatch) {
	for _, d := range m.Differences {
		p.mismatches.Add(context.Background(), 1, metric.WithAttributes(attribute.String("fusion.source_schema", m.Schema), attribute.String("fusion.shadow.kind", string(d.Kind))))
	}
}

// Compared counts a comparison.
func (p *MetricsPublisher) Compared(schema string, equal bool) {
	p.comparisons.Add(context.Background(), 1, metric.WithAttributes(attribute.String("fusion.source_schema", schema), attribute.Bool("fusion.shadow.equal", equal)))
}

// Dropped counts a dropped comparison.
func (p *MetricsPublisher) Dropped(schema, reason string) {
	p.dropped.Add(context.Background(), 1, metric.WithAttributes(attribute.String("fusion.source_schema", schema), attribute.String("fusion.shadow.reason", reason)))
}

// Multi publishes to every publisher in turn.
type Multi []Publisher

// Publish publishes to each.
func (m Multi) Publish(x Mismatch) {
	for _, p := range m {
		p.Publish(x)
	}
}

// Compared counts in each.
func (m Multi) Compared(schema string, equal bool) {
	for _, p := range m {
		p.Compared(schema, equal)
	}
}

// Dropped counts in each.
func (m Multi) Dropped(schema, reason string) {
	for _, p := range m {
		p.Dropped(schema, reason)
	}
}
