package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/leaktest"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor receives from ch, failing after a generous real-time limit that only catches a
// hung test.
func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestPeriodic: a duty runs when started, then every interval on its clock, at once when
// woken; a failed run does not end it, and Stop ends it and is idempotent.
func TestPeriodic(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	var at []time.Duration
	p := NewPeriodic("test", time.Minute, clk, testLogger(t), func(context.Context) error {
		at = append(at, clk.Now().Sub(start))
		return errors.New("fails every time")
	})
	p.ran = make(chan struct{})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run at start", p.ran)
	clk.WaitForTimers(1, nil)
	clk.Advance(time.Minute)
	waitFor(t, "the run after an interval", p.ran)
	p.Wake()
	waitFor(t, "the run when woken", p.ran)
	p.Stop()
	p.Stop()
	if want := []time.Duration{0, time.Minute, time.Minute}; len(at) != 3 || at[0] != want[0] || at[1] != want[1] || at[2] != want[2] {
		t.Errorf("runs at %v, want %v", at, want)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left after Stop", clk.Pending())
	}
}

// probe is a Service that reports its starts and stops.
type probe struct {
	started, stopped chan struct{}
	running          bool
}

func (p *probe) Start(context.Context) error {
	if !p.running {
		p.running = true
		p.started <- struct{}{}
	}
	return nil
}

func (p *probe) Stop() {
	if p.running {
		p.running = false
		p.stopped <- struct{}{}
	}
}

type noDispatch struct{}

func (noDispatch) Dispatch(context.Context, *engine.Fire) engine.Result { return engine.Result{} }

// TestManagerFollowsLeadership: the services start when the node becomes leader and stop
// when the node stops (it steps down), start again when it leads again, and stop with the
// Manager.
func TestManagerFollowsLeadership(t *testing.T) {
	st := teststore.Open(t, "sqlite")
	e, err := engine.New(engine.Config{Store: st, Dispatcher: noDispatch{}, NodeID: "n1", Logger: testLogger(t),
		HeartbeatInterval: 20 * time.Millisecond, NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{started: make(chan struct{}, 1), stopped: make(chan struct{}, 1)}
	m := NewManager(e.Leadership(), testLogger(t), p)
	m.changed = make(chan bool, 8)
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the services to start with leadership", p.started)
		if !e.IsLeader() || !waitFor(t, "the manager to lead", m.changed) {
			t.Fatal("services started on a node that does not lead")
		}
		if err := e.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the services to stop with the node", p.stopped)
		if waitFor(t, "the manager to step down", m.changed) {
			t.Fatal("the manager still leads")
		}
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(ctx)
	waitFor(t, "the services to start again", p.started)
	m.Stop()
	select {
	case <-p.stopped:
	default:
		t.Fatal("Manager.Stop returned with its services running")
	}
	m.Stop()
}

// TestDeleteOld: the retention duty deletes finished executions (and their output) fired
// before the retention, and nothing else.
func TestDeleteOld(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			st := teststore.Open(t, dialect)
			ctx := context.Background()
			now := time.Now()
			old, recent := now.Add(-31*24*time.Hour).UnixMilli(), now.Add(-time.Hour).UnixMilli()
			mk := func(state store.ExecutionState, fired int64) *store.Execution {
				return &store.Execution{JobID: 1, ScheduledAt: fired, FiredAt: fired, Cause: store.CauseAPI, State: state}
			}
			oldDone, oldRunning, recentDone := mk(store.ExecSucceeded, old), mk(store.ExecRunning, old), mk(store.ExecFailed, recent)
			// The old day has a partition (PostgreSQL), which goes whole: the running
			// execution is in the live table, not in it.
			if _, err := st.HistoryPartitionsEnsure(ctx, old, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := st.ExecutionsInsert(ctx, []*store.Execution{oldDone, oldRunning, recentDone}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.ExecutionLogAppend(ctx, oldDone.ID, []store.LogLine{{Line: 1, At: old, Message: "x"}}); err != nil {
				t.Fatal(err)
			}

			n, err := DeleteOld(ctx, st, now.Add(-30*24*time.Hour), nil, testLogger(t))
			if err != nil || n != 1 {
				t.Fatalf("DeleteOld = %d, %v; want the one old finished execution", n, err)
			}
			if _, err := st.ExecutionGet(ctx, oldDone.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the old finished execution is still there (%v)", err)
			}
			if lines, err := st.ExecutionLogList(ctx, oldDone.ID, 0, 10); err != nil || len(lines) != 0 {
				t.Errorf("its output is still there: %v, %v", lines, err)
			}
			oldDay := time.UnixMilli(old).UTC().Format("2006-01-02")
			ps, err := st.HistoryPartitions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.Day == oldDay {
					t.Errorf("the partition of %s, all of it older than the retention, is still there", oldDay)
				}
			}
			for _, keep := range []*store.Execution{oldRunning, recentDone} {
				if _, err := st.ExecutionGet(ctx, keep.ID); err != nil {
					t.Errorf("execution %d (%s) was deleted: %v", keep.ID, keep.State, err)
				}
			}
		})
	}
}

// TestDeleteOldAudit: the audit retention deletes the entries older than its own retention
// and keeps the rest, whatever the executions' retention.
func TestDeleteOldAudit(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			st := teststore.Open(t, dialect)
			ctx := context.Background()
			now := time.Now()
			for _, at := range []time.Time{now.Add(-400 * 24 * time.Hour), now.Add(-366 * 24 * time.Hour), now.Add(-40 * 24 * time.Hour)} {
				if err := st.AuditInsert(ctx, &store.AuditEntry{At: at.UnixMilli(), Action: "job.update"}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := DeleteOldAudit(ctx, st, now.Add(-365*24*time.Hour), nil, testLogger(t))
			if err != nil || n != 2 {
				t.Fatalf("DeleteOldAudit = %d, %v; want the two entries older than a year", n, err)
			}
			left, err := st.AuditList(ctx, store.AuditFilter{})
			if err != nil || len(left) != 1 {
				t.Fatalf("left: %+v, %v; want the recent entry", left, err)
			}
		})
	}
}

// TestLoseOrphaned: a run handed to a per-instance (stream) address that no registration
// holds is lost, also when its dispatch was recorded after the sweep forgot the instance; a
// run on a registered per-instance address and one on a push address without a registration
// (judged by the next process's beats there) go on.
func TestLoseOrphaned(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			e, err := engine.New(engine.Config{Store: st, Dispatcher: noDispatch{}, NodeID: "n1", Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			job := &store.Job{Group: "g", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "h",
				Concurrency: store.ConcurrencyAllow, Enabled: true}
			if err := st.JobInsert(ctx, job); err != nil {
				t.Fatal(err)
			}
			const orphan, registered, push = "stream://dead-instance", "stream://live-instance", "http://10.0.0.1:9999"
			if err := st.RegistryBeat(ctx, "billing", registered, "live-instance", "1", []string{"h"}); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixMilli()
			runs := map[string]*store.Execution{}
			for i, addr := range []string{orphan, registered, push} {
				x := &store.Execution{JobID: job.ID, TriggerID: 1, ScheduledAt: now, FiredAt: now, Cause: store.CauseAPI,
					State: store.ExecRunning, ExecutorAddress: addr, ExecutorApp: "billing", ShardIndex: i, ShardTotal: 3}
				if dups, err := st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil || len(dups) > 0 {
					t.Fatalf("insert the run on %s: %v (%d refused)", addr, err, len(dups))
				}
				runs[addr] = x
			}
			isStream := func(a string) bool { return strings.HasPrefix(a, "stream://") }
			if err := loseOrphaned(ctx, e, st, isStream, nil, testLogger(t)); err != nil {
				t.Fatal(err)
			}
			for addr, want := range map[string]store.ExecutionState{orphan: store.ExecLost, registered: store.ExecRunning, push: store.ExecRunning} {
				got, err := st.ExecutionGet(ctx, runs[addr].ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != want {
					t.Errorf("run on %s: %s, want %s", addr, got.State, want)
				}
			}
		})
	}
}
