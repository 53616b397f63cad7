package backend

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/gqlhttp"
)

// TurnsOver reports a response that hands the connection to the caller:
// a 101 Switching Protocols, or a body net/http made writable.
func TurnsOver(resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return true
	}
	_, writable := resp.Body.(io.Writer)
	return writable
}

// Upgraded judges a response that hands the connection over (TurnsOver):
// it must answer a request that asked to upgrade to the protocol it names,
// as httputil.ReverseProxy checks it, with a body the caller can write to.
// It returns that body, the connection, now the caller's; anything else
// (an unasked upgrade, another protocol than the one asked, a body that
// cannot be written) is refused with fault.ErrUnaskedUpgrade, and the
// connection closed.
func Upgraded(req *http.Request, resp *http.Response) (io.ReadWriteCloser, error) {
	asked, got := upgradeType(req.Header), resp.Header.Get("Upgrade")
	rwc, writable := resp.Body.(io.ReadWriteCloser)
	var err error
	switch {
	case !gqlhttp.AsksUpgrade(req):
		// The body is the raw connection: no bound would reach it, it
		// would leave the pool's count, and it would outlive Close.
		err = fmt.Errorf("%w: %s to a request that asked for no upgrade; the connection is closed", fault.ErrUnaskedUpgrade, resp.Status)
	case resp.StatusCode != http.StatusSwitchingProtocols || !writable:
		err = fmt.Errorf("%w: %s with a body that cannot be written; the connection is closed", fault.ErrUnaskedUpgrade, resp.Status)
	case !strings.EqualFold(asked, got):
		err = fmt.Errorf("%w: the server upgraded to protocol %q when %q was asked; the connection is closed", fault.ErrUnaskedUpgrade, got, asked)
	}
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	return rwc, nil
}

// upgradeType returns the protocol h asks to upgrade to, "" if none.
func upgradeType(h http.Header) string {
	return strings.TrimSpace(h.Get("Upgrade"))
}
