package dispatch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
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
// executor refused unserved (401: signed with a key it was not given) or answered busy (429).
// An executor that failed the call otherwise (an answer 500) does not pass its run on: it may
// have it, so the run is left to its heartbeats, neither failed nor sent elsewhere.
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
	}{{http.StatusUnauthorized, true}, {http.StatusTooManyRequests, true}, {http.StatusInternalServerError, false}} {
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
		} else if !res.Async || res.Err != nil || !strings.Contains(res.Message, "sent to "+other.URL+", no answer") {
			t.Fatalf("fire answered %d: %+v, want it left with that executor, to its heartbeats", c.status, res)
		} else if got, err := fx.st.ExecutionGet(ctx, ex.ID); err != nil || got.State != store.ExecRunning || got.ExecutorAddress != other.URL {
			t.Fatalf("execution after a %d: %+v %v, want it running, recorded for the executor that did not answer", c.status, got, err)
		}
		if n := fx.runs.Load(); n != runs {
			t.Fatalf("after a %d the handler ran %d times, want %d", c.status, n, runs)
		}
		if _, err := fx.st.RegistryLeave(ctx, "billing", other.URL); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunNotTakenWaitsForAnExecutor: when every executor online leaves the run untaken (the
// only one registered refuses connections: it is restarting, or its stream closed as the run
// was sent), the fire waits for one as a fire that finds none online does, reading the
// registry every heartbeat, and goes to the first that takes it; with none it fails once
// ExecutorWait has passed, on the dispatcher's clock.
func TestRunNotTakenWaitsForAnExecutor(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	dead := closedAddress(t)
	if err := fx.st.RegistryBeat(ctx, "billing", dead, "restarting", "", []string{"once"}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	r := NewRemote(Config{Store: fx.st, Clock: clk, HeartbeatInterval: time.Second, ExecutorWait: 10 * time.Second})
	fx.job.Routing = string(First)
	if !slices.IsSorted([]string{dead, fx.exe.Address()}) {
		fx.job.Routing = string(Last) // the dead one is picked first
	}
	dispatch := func(live bool) (res engine.Result, advances int) {
		ex := fx.running(t, store.Owner{Node: "n"})
		dispatched, returned := make(chan engine.Result, 1), make(chan struct{})
		go func() {
			dispatched <- r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job})
			close(returned)
		}()
		for clk.WaitForTimers(1, returned) {
			// Past the repeats of the send to the dead one: without the wait, the fire
			// would have failed by now.
			if advances == runAttempts+1 {
				got, err := fx.st.ExecutionGet(ctx, ex.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.ExecutorAddress != dead {
					t.Fatalf("execution recorded at %q before the live executor registered, want %q: the dead one was never tried", got.ExecutorAddress, dead)
				}
				if live {
					if err := fx.st.RegistryBeat(ctx, "billing", fx.exe.Address(), fx.exe.Instance(), "", []string{"once"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			clk.Advance(time.Second)
			advances++
		}
		return <-dispatched, advances
	}

	if res, n := dispatch(false); res.Async || !errors.Is(res.Err, errNotTaken) {
		t.Fatalf("fire with only an executor refusing connections for ExecutorWait: %+v, want it failed as not taken", res)
	} else if n < 10 {
		t.Fatalf("the fire failed after %d s, want it to wait ExecutorWait (10 s)", n)
	}
	res, _ := dispatch(true)
	if !res.Async || !strings.Contains(res.Message, "("+dead+" did not take it)") {
		t.Fatalf("fire once a live executor registered: %+v, want it taken by the live one", res)
	}
	<-fx.got
	if n := fx.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
