package executor_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// TestMaxRunsAnswersBusy: an executor holding Config.MaxRuns runs (running or queued) answers
// a new run 429 and does not take it, so the server keeps it and offers it again; a repeat
// of a run it holds is still answered taken (answered busy, the server would send it to
// another executor and it would run twice). A slot freed takes the next run. A stopping
// executor answers new runs 429 too, and repeats of its runs taken.
func TestMaxRunsAnswersBusy(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	peer := executortest.NewPeer(t, token)
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing", MaxRuns: 3,
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("g", g.handler)
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var stopped chan error // set once the test stops the executor
	opened := map[int64]bool{}
	open := func(id int64) { g.open(id); opened[id] = true }
	t.Cleanup(func() {
		for id := range int64(6) {
			if !opened[id+1] {
				open(id + 1)
			}
		}
		if stopped == nil {
			_ = ex.Stop(ctx)
		} else if err := <-stopped; err != nil {
			t.Error(err)
		}
	})
	s := &setup{peer: peer, ex: ex, addr: ex.Address()}
	run := func(id, job int64) wire.RunRequest {
		return wire.RunRequest{ExecutionID: id, JobID: job, Handler: "g", Concurrency: "serial"}
	}
	busy := func(req wire.RunRequest, want string) {
		t.Helper()
		req.Instance = peer.InstanceAt(s.addr)
		status, body, err := peer.Call(ctx, s.addr, wire.PathRun, req.Instance, req)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusTooManyRequests || !strings.Contains(string(body), want) {
			t.Fatalf("run %d: %d %q, want 429 saying %q", req.ExecutionID, status, body, want)
		}
	}

	s.mustRun(t, run(1, 5))
	s.mustRun(t, run(2, 6))
	s.mustRun(t, run(3, 6)) // queued behind 2: held all the same
	busy(run(4, 7), "holds 3 runs")
	if resp := s.run(t, run(1, 5)); !resp.Accepted || resp.Message != "already accepted" {
		t.Fatalf("a repeat of a held run while full: %+v, want it answered taken", resp)
	}
	g.waitStart(t)
	g.waitStart(t)
	open(1)
	peer.WaitResult(t, 1, wait)
	s.mustRun(t, run(4, 7)) // the slot run 1 held
	busy(run(5, 8), "holds 3 runs")

	stopped = make(chan error, 1)
	go func() { stopped <- ex.Stop(context.Background()) }()
	// Run 3 still queued is canceled by the stop: the executor is stopping from then on.
	peer.Wait(t, wait, "the queued run canceled", func() bool { return peer.HasResult(3) })
	busy(run(6, 9), "stopping")
	if resp := s.run(t, run(2, 6)); !resp.Accepted {
		t.Fatalf("a repeat of a held run while stopping: %+v, want it answered taken", resp)
	}
	for _, id := range []int64{5, 6} {
		if peer.HasResult(id) {
			t.Fatalf("run %d was answered busy and has a result: it was taken", id)
		}
	}
}
