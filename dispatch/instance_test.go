package dispatch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestRunForRestartedInstance: the registry still names the executor's previous instance at
// its address (it restarted a moment ago). The executor refuses a run recorded for the old
// instance, and the dispatcher records it for the instance that answered and sends it again:
// the run is handed over, and the server counts it as the new instance's.
func TestRunForRestartedInstance(t *testing.T) {
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
	job := &store.Job{Group: "g", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "h",
		Concurrency: store.ConcurrencyAllow}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	ex := &store.Execution{JobID: job.ID, ScheduledAt: time.Now().UnixMilli(), Cause: store.CauseManual, Node: "n", State: store.ExecRunning}
	if _, err := st.ExecutionsInsert(ctx, []*store.Execution{ex}); err != nil {
		t.Fatal(err)
	}
	peer := executortest.NewPeer(t, token)
	exe, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing", Listen: "127.0.0.1:0", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	exe.Handle("h", func(context.Context) error { return nil })
	if err := exe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exe.Stop(context.Background()) })
	if err := st.RegistryBeat(ctx, "billing", exe.Address(), "the-old-one", []string{"h"}); err != nil {
		t.Fatal(err)
	}

	r := NewRemote(Config{Store: st, Token: token})
	if _, _, err := r.addresses(ctx, "billing", "h"); err != nil { // reads the registry, old instance and all
		t.Fatal(err)
	}
	if res := r.send(ctx, ex, job, exe.Address(), 0, 1); !res.Async || res.Err != nil {
		t.Fatalf("dispatch to the restarted executor: %+v, want the run handed over", res)
	}
	runs, err := st.ExecutionsRunningOnExecutor(ctx, "billing", exe.Address())
	if err != nil {
		t.Fatal(err)
	}
	if got := peer.WaitResult(t, ex.ID, 10*time.Second); got.State != executor.StateSucceeded {
		t.Fatalf("result %+v, want succeeded", got)
	}
	if len(runs) != 1 || runs[0].Instance != exe.Instance() {
		t.Fatalf("running on the executor: %+v, want the run recorded for instance %s", runs, exe.Instance())
	}

	// An executor refuses outright a run for another instance.
	resp, err := peer.Run(ctx, exe.Address(), executor.RunRequest{ExecutionID: 99, JobID: 1, Handler: "h", Instance: "the-old-one"})
	if err != nil || resp.Accepted || resp.Instance != exe.Instance() {
		t.Fatalf("run for another instance: %+v %v, want refused naming this instance", resp, err)
	}
}
