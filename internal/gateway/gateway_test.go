package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/fusiongo/transport/internal/gateway"
)

// TestMemo: every context derived from WithRequest's shares its memo and
// request; another WithRequest, even for the same request, has a memo of
// its own; a context without a gateway request has none; cancelling the
// parent still cancels the derived contexts.
func TestMemo(t *testing.T) {
	r, _ := http.NewRequest(http.MethodPost, "http://gateway.test/graphql", nil)
	parent, cancel := context.WithCancel(context.Background())
	ctx := gateway.WithRequest(parent, r)
	derived, stop := context.WithCancel(context.WithValue(ctx, struct{}{}, "x"))
	defer stop()

	if gateway.Request(derived) != r || gateway.Header(derived) == nil {
		t.Fatal("the derived context lost the gateway request")
	}
	if !gateway.Memo(ctx).CompareAndSwap(nil, "decided") {
		t.Fatal("a new memo was not empty")
	}
	if got := gateway.Memo(derived).Load(); got != "decided" {
		t.Errorf("the derived context's memo holds %v, want the parent's", got)
	}
	if got := gateway.Memo(gateway.WithRequest(parent, r)).Load(); got != nil {
		t.Errorf("another WithRequest's memo holds %v, want nothing", got)
	}
	if gateway.Memo(context.Background()) != nil || gateway.WithRequest(parent, nil) != parent {
		t.Error("a context without a gateway request has a memo, or WithRequest(nil) changed it")
	}
	cancel()
	<-derived.Done()
}
