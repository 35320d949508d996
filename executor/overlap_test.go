package executor_test

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// TestExecutorOverlapPolicies: an executor applies the overlap policies that came after
// serial/discard/replace with the same rule as the nodes (jobrun.Tracker).
func TestExecutorOverlapPolicies(t *testing.T) {
	t.Run("buffer_one", func(t *testing.T) {
		g := newGate()
		s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
		run := func(id int64) {
			s.mustRun(t, wire.RunRequest{ExecutionID: id, JobID: 5, Handler: "g", Concurrency: wire.ConcurrencyBufferOne})
		}
		run(1)
		g.waitStart(t)
		run(2)
		run(3) // takes 2's place
		if res := s.peer.WaitResult(t, 2, wait); res.State != wire.StateCanceled || res.StartedAt != 0 ||
			!strings.Contains(res.Message, "replaced by execution 3") {
			t.Errorf("the displaced run: %+v, want canceled before it started, by 3", res)
		}
		g.open(1)
		if id := g.waitStart(t); id != 3 {
			t.Fatalf("started %d after 1, want 3", id)
		}
		g.open(3)
		if res := s.peer.WaitResult(t, 1, wait); res.State != wire.StateSucceeded {
			t.Errorf("run 1 was not left alone: %+v", res)
		}
		if res := s.peer.WaitResult(t, 3, wait); res.State != wire.StateSucceeded {
			t.Errorf("run 3: %+v", res)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		g := newGate()
		s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
		s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", Concurrency: wire.ConcurrencyCancel})
		g.waitStart(t)
		s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 5, Handler: "g", Concurrency: wire.ConcurrencyCancel})
		res := s.peer.WaitResult(t, 1, wait)
		if res.State != wire.StateCanceled || !strings.Contains(res.Message, "replaced by execution 2") {
			t.Errorf("the canceled run: %+v", res)
		}
		if id := g.waitStart(t); id != 2 {
			t.Fatalf("started %d, want 2", id)
		}
		g.open(2)
		if res := s.peer.WaitResult(t, 2, wait); res.State != wire.StateSucceeded {
			t.Errorf("run 2: %+v", res)
		}
	})
	t.Run("at_most", func(t *testing.T) {
		g := newGate()
		s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
		run := func(id int64) {
			s.mustRun(t, wire.RunRequest{ExecutionID: id, JobID: 5, Handler: "g", Concurrency: wire.ConcurrencyAtMost, MaxConcurrent: 2})
		}
		run(1)
		run(2)
		g.waitStart(t)
		g.waitStart(t)
		if resp := s.run(t, wire.RunRequest{ExecutionID: 3, JobID: 5, Handler: "g", Concurrency: wire.ConcurrencyAtMost, MaxConcurrent: 2}); !resp.Accepted ||
			!strings.Contains(resp.Message, "queued behind 2") {
			t.Fatalf("run 3 beside two: %+v, want queued behind 2", resp)
		}
		g.open(2)
		if id := g.waitStart(t); id != 3 {
			t.Fatalf("started %d once 2 ended, want 3", id)
		}
		g.open(1)
		g.open(3)
		for _, id := range []int64{1, 2, 3} {
			if res := s.peer.WaitResult(t, id, wait); res.State != wire.StateSucceeded {
				t.Errorf("run %d: %+v", id, res)
			}
		}
		resp := s.run(t, wire.RunRequest{ExecutionID: 9, JobID: 6, Handler: "g", Concurrency: wire.ConcurrencyAtMost})
		if resp.Accepted || !strings.Contains(resp.Message, "max_concurrent") {
			t.Errorf("at_most without a limit: %+v, want refused naming max_concurrent", resp)
		}
	})
}
