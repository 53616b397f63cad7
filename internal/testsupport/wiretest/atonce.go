package wiretest

import (
	"io"
	"net/http"
	"sync"
	"testing"
)

// StatusesAtOnce calls send n times at once, reads each answer to its end
// and returns their status codes, in the order they came; a call that
// fails fails the test.
func StatusesAtOnce(t testing.TB, n int, send func() (*http.Response, error)) (statuses []int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := send()
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses = append(statuses, resp.StatusCode)
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses
}
