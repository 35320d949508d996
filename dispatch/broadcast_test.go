package dispatch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestUntakenShardRetried: a broadcast shard that no executor takes is recorded failed
// through the engine, so the job's retry applies to it: its next attempt is pending, as the
// same shard.
func TestUntakenShardRetried(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	job := &store.Job{Group: "g", Name: "b", TargetKind: store.TargetRemote, App: "batch", Handler: "h",
		Concurrency: store.ConcurrencyAllow, Routing: string(ShardingBroadcast), MaxRetries: 1, Enabled: true}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	ex := &store.Execution{JobID: job.ID, TriggerID: 9, ScheduledAt: 1000, FiredAt: 1000, Cause: store.CauseSchedule,
		Node: "n", State: store.ExecRunning}
	if _, err := st.ExecutionsInsert(ctx, []*store.Execution{ex}); err != nil {
		t.Fatal(err)
	}
	// Shard 0's executor takes the run; shard 1's refuses every run for good (a 4xx).
	took := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"accepted":true}`))
	}))
	t.Cleanup(took.Close)
	refuses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such handler", http.StatusBadRequest)
	}))
	t.Cleanup(refuses.Close)

	r := NewRemote(Config{Store: st})
	e, err := engine.New(engine.Config{Store: st, Dispatcher: r, NodeID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	r.RecordWith(e.CompleteRemote)
	res := r.broadcast(ctx, &engine.Fire{Execution: ex, Job: job}, []string{took.URL, refuses.URL}, nil)
	if !res.Async {
		t.Fatalf("shard 0: %+v, want it handed over", res)
	}
	xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: job.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var failed, retry *store.Execution
	for _, x := range xs {
		switch {
		case x.ShardIndex == 1 && x.Attempt == 0:
			failed = x
		case x.ShardIndex == 1 && x.Attempt == 1:
			retry = x
		}
	}
	if failed == nil || failed.State != store.ExecFailed {
		t.Fatalf("shard 1: %+v, want it failed", failed)
	}
	if retry == nil || retry.State != store.ExecPending || retry.ShardTotal != 2 || retry.Cause != store.CauseRetry {
		t.Fatalf("retry of shard 1: %+v, want a pending retry of the same shard", retry)
	}
}
