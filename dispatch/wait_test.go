package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

type noDispatch struct{}

func (noDispatch) Dispatch(context.Context, *engine.Fire) engine.Result { return engine.Result{} }

// TestDispatchWaitsForAnExecutor: a fire that finds no executor of its app online waits for
// one, reading the registry every heartbeat, and goes to the first that registers; with none
// it fails once ExecutorWait has passed, on the dispatcher's clock.
func TestDispatchWaitsForAnExecutor(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	clk := clock.NewFake(time.Now())
	r := NewRemote(Config{Store: fx.st, Clock: clk, HeartbeatInterval: time.Second, ExecutorWait: 10 * time.Second})
	dispatched, returned := make(chan engine.Result, 1), make(chan struct{})
	ex := fx.running(t, store.Owner{Node: "n"})
	go func() {
		dispatched <- r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job})
		close(returned)
	}()
	if !clk.WaitForTimers(1, returned) { // it found none, and waits
		t.Fatalf("dispatch with no executor online returned at once: %+v", <-dispatched)
	}
	if err := fx.st.RegistryBeat(ctx, "billing", fx.exe.Address(), fx.exe.Instance(), "", []string{"once"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if res := <-dispatched; !res.Async || res.Err != nil {
		t.Fatalf("dispatch once an executor registered: %+v, want the run handed over", res)
	}

	fx.job.App = "nobody"
	ex = fx.running(t, store.Owner{Node: "n"})
	go func() { dispatched <- r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job}) }()
	for range 10 {
		clk.WaitForTimers(1, nil)
		clk.Advance(time.Second)
	}
	if res := <-dispatched; res.Err == nil || !strings.Contains(res.Err.Error(), `no executor of app "nobody" is online`) {
		t.Fatalf("dispatch with no executor for ExecutorWait: %+v, want the failure", res)
	}
}

// TestJobDispatchTimeout: a job's own dispatch timeout bounds the wait for an executor
// instead of ExecutorWait, shorter or longer.
func TestJobDispatchTimeout(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	clk := clock.NewFake(time.Now())
	r := NewRemote(Config{Store: fx.st, Clock: clk, HeartbeatInterval: time.Second, ExecutorWait: 10 * time.Second})
	fx.job.App = "nobody"
	for _, c := range []struct {
		timeoutMs int64
		waits     int // heartbeats waited before the failure
	}{{3000, 3}, {15000, 15}, {0, 10}} {
		fx.job.DispatchTimeoutMs = c.timeoutMs
		ex := fx.running(t, store.Owner{Node: "n"})
		dispatched, returned := make(chan engine.Result, 1), make(chan struct{})
		go func() {
			dispatched <- r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job})
			close(returned)
		}()
		waits := 0
		for clk.WaitForTimers(1, returned) {
			clk.Advance(time.Second)
			waits++
		}
		res := <-dispatched
		if res.Err == nil || !strings.Contains(res.Err.Error(), `no executor of app "nobody" is online`) {
			t.Fatalf("dispatch timeout %d ms: %+v, want the failure", c.timeoutMs, res)
		}
		if waits != c.waits {
			t.Errorf("dispatch timeout %d ms: failed after %d heartbeats, want %d", c.timeoutMs, waits, c.waits)
		}
	}
}

// TestExecutorNotOfflineAfterOutage: the database is cut off for longer than an executor may
// stay silent, so its registry row is stale when the database is back although the executor
// never stopped. A fire dispatched during the outage waits for the registry instead of
// failing; after it, while the node has not seen the database for that long again, the
// executor counts as online (the executor sweep's rule), and fires go to it instead of
// failing for want of an executor.
func TestExecutorNotOfflineAfterOutage(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, proxy := teststore.OpenProxied(t, dialect)
			fx := newRemoteFixtureOn(t, st)
			e, err := engine.New(engine.Config{Store: st, Dispatcher: noDispatch{}, NodeID: "n1",
				HeartbeatInterval: 200 * time.Millisecond, NodeTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Stop(ctx) })
			const heartbeat = time.Second // executors'; silent for 3 s, one is gone
			r := NewRemote(Config{Store: st, HeartbeatInterval: heartbeat, ExecutorWait: 10 * time.Second})
			r.SeesDatabaseWith(e.SeesDatabaseFor)
			if err := st.RegistryBeat(ctx, "billing", fx.exe.Address(), fx.exe.Instance(), "", []string{"once"}); err != nil {
				t.Fatal(err)
			}
			ex := fx.running(t, store.Owner{Node: "n"})

			if err := proxy.Cut(); err != nil {
				t.Fatal(err)
			}
			// A fire dispatched during the outage cannot read the registry: it waits.
			during := make(chan engine.Result, 1)
			go func() { during <- r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job}) }()
			time.Sleep(LiveIntervals*heartbeat + 500*time.Millisecond) // the outage: no beat is recorded
			if err := proxy.Heal(); err != nil {
				t.Fatal(err)
			}
			if res := <-during; !res.Async || res.Err != nil {
				t.Fatalf("dispatch during the outage: %+v, want the run handed to the executor after it", res)
			}
			ex = fx.running(t, store.Owner{Node: "n"})
			if res := r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job}); !res.Async || res.Err != nil {
				t.Fatalf("dispatch after the outage: %+v, want the run handed to the executor", res)
			}
		})
	}
}
