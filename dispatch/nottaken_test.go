package dispatch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// closedAddress is an executor address where nothing listens: a connection is refused, as
// while an executor restarts.
func closedAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	l.Close()
	return addr
}

// TestRunGoesToAnotherWhenNotTaken: with round-robin routing over a live executor and an
// address that refuses connections (its executor restarting, still in the registry), every
// fire runs: a run no executor took goes to the next one, and says so; so does a run an
// executor refused unserved (401: signed with a key it was not given). An executor that
// failed the call otherwise (an answer 500) does not pass its run on: it may have it.
func TestRunGoesToAnotherWhenNotTaken(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	fx.job.Routing = string(RoundRobin)
	dead := closedAddress(t)
	for _, in := range [][2]string{{fx.exe.Address(), fx.exe.Instance()}, {dead, "restarting"}} {
		if err := fx.st.RegistryBeat(ctx, "billing", in[0], in[1], "", []string{"once"}); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRemote(Config{Store: fx.st})
	const fires = 4
	passedOn := 0
	for range fires {
		ex := fx.running(t, store.Owner{Node: "n"})
		res := r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job})
		if !res.Async || res.Err != nil {
			t.Fatalf("fire %d: %+v, want it handed to the live executor", ex.ID, res)
		}
		if strings.Contains(res.Message, "("+dead+" did not take it)") {
			passedOn++
		}
		got, err := fx.st.ExecutionGet(ctx, ex.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ExecutorAddress != fx.exe.Address() {
			t.Fatalf("execution %d recorded at %q, want the executor that took it, %q", ex.ID, got.ExecutorAddress, fx.exe.Address())
		}
		<-fx.got
	}
	if passedOn != fires/2 {
		t.Fatalf("%d of %d fires say they were passed on, want every other one (round robin over two)", passedOn, fires)
	}
	if n := fx.runs.Load(); n != fires {
		t.Fatalf("the handler ran %d times, want %d", n, fires)
	}
	if n := r.Stats().Unreachable.Load(); n != 0 {
		t.Fatalf("%d dispatches counted unreachable, want none: every run was taken", n)
	}

	if _, err := fx.st.RegistryLeave(ctx, "billing", dead); err != nil {
		t.Fatal(err)
	}
	runs := int32(fires)
	for _, c := range []struct {
		status   int
		passedOn bool
	}{{http.StatusUnauthorized, true}, {http.StatusInternalServerError, false}} {
		var calls atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			http.Error(w, "no", c.status)
		}))
		t.Cleanup(other.Close)
		if err := fx.st.RegistryBeat(ctx, "billing", other.URL, "other", "", []string{"once"}); err != nil {
			t.Fatal(err)
		}
		r = NewRemote(Config{Store: fx.st})
		fx.job.Routing = string(First) // the other executor, picked first
		if !slices.IsSorted([]string{other.URL, fx.exe.Address()}) {
			fx.job.Routing = string(Last)
		}
		ex := fx.running(t, store.Owner{Node: "n"})
		res := r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job})
		if calls.Load() == 0 {
			t.Fatalf("the executor answering %d was never called; the test proves nothing", c.status)
		}
		if c.passedOn {
			if !res.Async || !strings.Contains(res.Message, "("+other.URL+" did not take it)") {
				t.Fatalf("fire refused %d: %+v, want it passed on to the live executor", c.status, res)
			}
			<-fx.got
			runs++
		} else if res.Async || res.Err == nil || !strings.Contains(res.Err.Error(), other.URL) {
			t.Fatalf("fire answered %d: %+v, want it failed there", c.status, res)
		}
		if n := fx.runs.Load(); n != runs {
			t.Fatalf("after a %d the handler ran %d times, want %d", c.status, n, runs)
		}
		if _, err := fx.st.RegistryLeave(ctx, "billing", other.URL); err != nil {
			t.Fatal(err)
		}
	}
}
