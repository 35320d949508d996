package executor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// TestStopBoundedWhileServerHangs: the server takes a result call and never answers. Stop
// returns within its context, every result spooled for the next start; the reporter's send
// used to run on a context nothing canceled, and Stop waited out its 10 s timeout. Its error
// is one line however many batches wait: it used to repeat the failure once a batch.
func TestStopBoundedWhileServerHangs(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	target, err := url.Parse(peer.URL)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	hung := make(chan struct{}, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathResults {
			forward.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
		select {
		case hung <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer front.Close()
	dir := t.TempDir()
	ex, err := executor.New(executor.Config{Server: front.URL, Token: token, App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("ok", func(context.Context) error { return nil })
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := &setup{peer: peer, ex: ex, addr: ex.Address(), dir: dir}
	// More results than three batches.
	const runs = 250
	for id := int64(1); id <= runs; id++ {
		s.mustRun(t, wire.RunRequest{ExecutionID: id, JobID: 1, Handler: "ok"})
	}
	<-hung
	const bound = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	err = ex.Stop(ctx)
	if took := time.Since(began); took > bound+500*time.Millisecond {
		t.Fatalf("Stop took %v with the server hanging, want at most %v", took, bound)
	}
	if got := spooled(t, dir); len(got) != runs {
		t.Errorf("spooled %d results after Stop, want %d", len(got), runs)
	}
	// Each spooling writes what waits in one file (one fsync), not a file per result: here
	// once when the hung send is given up, and once more for what came after.
	if n := spoolFiles(t, dir); n > 3 {
		t.Errorf("%d spool files for %d results, want a few", n, runs)
	}
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "batches of results not delivered") {
		t.Errorf("Stop: %q, want one line counting the batches not delivered", err)
	}
}
