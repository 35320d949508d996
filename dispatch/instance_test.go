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
	f := newFixture(t, func(context.Context) error { return nil })
	st, job, ex, exe, peer := f.st, f.job, f.ex, f.exe, f.peer
	if err := st.RegistryBeat(ctx, "billing", exe.Address(), "the-old-one", []string{"h"}); err != nil {
		t.Fatal(err)
	}

	r := NewRemote(Config{Store: st, Token: fixtureToken})
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

const fixtureToken = "exec-token"

// fixture is a migrated SQLite store holding a remote job of app billing with handler "h"
// and a running execution of it, and a started SDK executor that runs "h" and reports to a
// peer.
type fixture struct {
	st   *sqlstore.Store
	job  *store.Job
	ex   *store.Execution
	exe  *executor.Executor
	peer *executortest.Peer
}

func newFixture(t *testing.T, h executor.Handler) *fixture {
	t.Helper()
	ctx := context.Background()
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
	peer := executortest.NewPeer(t, fixtureToken)
	exe, err := executor.New(executor.Config{Server: peer.URL, Token: fixtureToken, App: "billing", Listen: "127.0.0.1:0", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	exe.Handle("h", h)
	if err := exe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exe.Stop(context.Background()) })
	return &fixture{st: st, job: job, ex: ex, exe: exe, peer: peer}
}
