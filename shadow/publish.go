package shadow

import (
	"context"
	"log/slog"

	"github.com/fusiongo/transport/answer"
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
// comparison goroutines, and from the callers' for a query dropped before
// its comparison started, concurrently; they must not block for long.
//
// ctx is the shadowed request's context, without its cancellation (a
// comparison ends after the caller got its answer): its values, the
// request's trace among them, are those of the request. A Publisher may
// log or measure with it; transport.WithTelemetry's shadow counters do.
type Publisher interface {
	// Publish reports a mismatch.
	Publish(ctx context.Context, m Mismatch)
	// Compared counts a comparison, equal or not, after Publish for a
	// mismatch.
	Compared(ctx context.Context, schema string, equal bool)
	// Dropped counts a sampled query that could not be compared.
	Dropped(ctx context.Context, schema, reason string)
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

// Publish logs the mismatch with one attribute group per difference, with
// ctx (a handler may take the trace from it).
func (p LogPublisher) Publish(ctx context.Context, m Mismatch) {
	attrs := []any{"source_schema", m.Schema, "legacy_status", m.PrimaryStatus, "sockets_status", m.CandidateStatus, "differences", len(m.Differences)}
	for i, d := range m.Differences {
		if i == 5 {
			attrs = append(attrs, "more", len(m.Differences)-i)
			break
		}
		attrs = append(attrs, slog.Group("difference", "kind", string(d.Kind), "path", d.Path, "explanation", d.Explanation))
	}
	p.logger().WarnContext(ctx, "shadow mismatch", attrs...)
}

// Compared logs nothing.
func (p LogPublisher) Compared(context.Context, string, bool) {}

// Dropped logs at Debug.
func (p LogPublisher) Dropped(ctx context.Context, schema, reason string) {
	p.logger().DebugContext(ctx, "shadow comparison dropped", "source_schema", schema, "reason", reason)
}

// Multi publishes to every publisher in turn.
type Multi []Publisher

// Publish publishes to each.
func (m Multi) Publish(ctx context.Context, x Mismatch) {
	for _, p := range m {
		p.Publish(ctx, x)
	}
}

// Compared counts in each.
func (m Multi) Compared(ctx context.Context, schema string, equal bool) {
	for _, p := range m {
		p.Compared(ctx, schema, equal)
	}
}

// Dropped counts in each.
func (m Multi) Dropped(ctx context.Context, schema, reason string) {
	for _, p := range m {
		p.Dropped(ctx, schema, reason)
	}
}
