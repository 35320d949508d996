package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRunForRestartedInstance: the registry still names the executor's previous instance at
// its address (it restarted a moment ago). The executor refuses a run recorded for the old
// instance, and the dispatcher records it for the instance that answered and sends it again:
// the run is handed over, and the server counts it as the new instance's.
func TestRunForRestartedInstance(t *testing.T) {
	ctx := context.Background()
	f := newRemoteFixture(t)
	st, job, exe, peer := f.st, f.job, f.exe, f.peer
	ex := f.running(t, store.Owner{Node: "n"})
	if err := st.RegistryBeat(ctx, "billing", exe.Address(), "the-old-one", "", []string{"once"}); err != nil {
		t.Fatal(err)
	}

	r := NewRemote(Config{Store: st})
	if _, _, _, err := r.addresses(ctx, "billing", "once"); err != nil { // reads the registry, old instance and all
		t.Fatal(err)
	}
	if res := r.send(ctx, ex, job, exe.Address(), 0, 1, nil); !res.Async || res.Err != nil {
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
	resp, err := peer.Run(ctx, exe.Address(), executor.RunRequest{ExecutionID: 99, JobID: 1, Handler: "once", Instance: "the-old-one"})
	if err == nil || resp.Accepted || !strings.Contains(err.Error(), executor.MisdirectedInstance) || !strings.Contains(err.Error(), exe.Instance()) {
		t.Fatalf("run for another instance: %+v %v, want refused naming this instance", resp, err)
	}
}
