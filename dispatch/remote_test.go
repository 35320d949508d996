package dispatch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
)

// TestRunAnswerLost puts a real executor behind a proxy that delivers the first /run and
// then drops the connection without its answer. The dispatcher sends the run again; the
// executor answers that it has it; the handler runs once and the fire is handed over, where
// failing it would have had the job's retry run it a second time.
func TestRunAnswerLost(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	f := newFixture(t, func(context.Context) error { runs.Add(1); return nil })
	st, job, ex, exe, peer := f.st, f.job, f.ex, f.exe, f.peer

	target, err := url.Parse(exe.Address())
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	var dropped atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == executor.PathRun && dropped.CompareAndSwap(false, true) {
			body, _ := io.ReadAll(r.Body)
			req, _ := http.NewRequest(http.MethodPost, exe.Address()+executor.PathRun, bytes.NewReader(body))
			req.Header = r.Header.Clone()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the run reached the executor; its answer never comes back
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	r := NewRemote(Config{Store: st, Token: fixtureToken})
	res := r.send(ctx, ex, job, proxy.URL, 0, 1)
	if !dropped.Load() {
		t.Fatal("the proxy never dropped an answer; the test proves nothing")
	}
	if !res.Async || res.Err != nil {
		t.Fatalf("dispatch after a lost answer: %+v, want the run handed over", res)
	}
	if got := peer.WaitResult(t, ex.ID, 10*time.Second); got.State != executor.StateSucceeded {
		t.Fatalf("result %+v, want succeeded", got)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
