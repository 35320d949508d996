package dispatch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestRunAnswerLost puts a real executor behind a proxy that delivers the first /run and
// then drops the connection without its answer. The dispatcher sends the run again; the
// executor answers that it has it; the handler runs once and the fire is handed over, where
// failing it would have had the job's retry run it a second time.
func TestRunAnswerLost(t *testing.T) {
	ctx := context.Background()
	const token = "exec-token"
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	job := &store.Job{Group: "g", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "once",
		Concurrency: store.ConcurrencyAllow}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	ex := &store.Execution{JobID: job.ID, ScheduledAt: now, FiredAt: now + 3, Cause: store.CauseManual, Node: "n", State: store.ExecRunning}
	if _, err := st.ExecutionsInsert(ctx, []*store.Execution{ex}); err != nil {
		t.Fatal(err)
	}

	peer := executortest.NewPeer(t, token)
	var runs atomic.Int32
	exe, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing", Listen: "127.0.0.1:0", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan executor.Run, 2)
	exe.Handle("once", func(ctx context.Context) error {
		runs.Add(1)
		run, _ := executor.RunFrom(ctx)
		got <- run
		return nil
	})
	if err := exe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exe.Stop(context.Background()) })

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

	r := NewRemote(Config{Store: st, Token: token})
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
	// The run carries its fire's identity: fired time and idempotency key.
	run := <-got
	if run.FiredAt.UnixMilli() != ex.FiredAt || run.IdempotencyKey != jobrun.IdempotencyKey(job.ID, 0, ex.ScheduledAt, 0) {
		t.Errorf("run fired at %v with key %q, want %d and the fire's key", run.FiredAt, run.IdempotencyKey, ex.FiredAt)
	}
}

// TestRunRepeatsOnTheClock drops the first two /run calls without an answer: the dispatcher
// sends the run again after the pauses of runRepeats, measured on its clock, not before.
func TestRunRepeatsOnTheClock(t *testing.T) {
	var calls atomic.Int32
	exe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		io.WriteString(w, `{"accepted":true}`)
	}))
	t.Cleanup(exe.Close)
	fake := clock.NewFake(time.Unix(1732230000, 0))
	r := NewRemote(Config{Token: "t", Clock: fake,
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})

	done := make(chan struct{})
	var resp executor.RunResponse
	var err error
	go func() {
		defer close(done)
		err = r.callRepeating(context.Background(), exe.URL, executor.PathRun, executor.RunRequest{ExecutionID: 1}, &resp)
	}()
	for i := range runAttempts - 1 {
		pause := runRepeats.Delay(i)
		if !fake.WaitForTimers(1, done) {
			t.Fatalf("pause %d: the call returned instead of waiting: %v", i, err)
		}
		if n := calls.Load(); n != int32(i+1) {
			t.Fatalf("pause %d: %d calls before the clock moved, want %d", i, n, i+1)
		}
		fake.Advance(pause)
	}
	<-done
	if err != nil || !resp.Accepted || calls.Load() != 3 {
		t.Fatalf("after the repeats: %v %+v, %d calls; want accepted on the third", err, resp, calls.Load())
	}
}
