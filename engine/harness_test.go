package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// openStore opens and migrates a fresh database of the dialect for t.
func openStore(t *testing.T, dialect string) store.Store { return teststore.Open(t, dialect) }

// eachDialect runs f as a parallel subtest on every dialect.
func eachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range testdb.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// fireKey identifies a fire of a trigger: what must happen exactly once.
type fireKey struct {
	trigger     int64
	scheduledAt int64
}

// recorder is a Dispatcher that records every fire it runs, by node, and runs an optional
// behaviour for it.
type recorder struct {
	mu    sync.Mutex
	runs  map[fireKey][]string // the nodes that ran the fire
	execs []*store.Execution
	// behave decides the outcome; nil succeeds at once.
	behave func(ctx context.Context, f *Fire) Result
	// started receives every fire as its handler starts.
	started chan *Fire
}

func newRecorder() *recorder {
	return &recorder{runs: map[fireKey][]string{}, started: make(chan *Fire, 1<<16)}
}

// fireLedger is a ledger kept outside the database of every run of every fire, by node,
// recoveries and retries included (the recorder's runs leave them out).
type fireLedger struct {
	mu   sync.Mutex
	runs map[fireKey][]string
}

func newFireLedger() *fireLedger { return &fireLedger{runs: map[fireKey][]string{}} }

// dispatcher is node's Dispatcher: it enters each run in the ledger, then runs it on r.
func (l *fireLedger) dispatcher(r *recorder, node string) Dispatcher {
	return dispatchFunc(func(ctx context.Context, f *Fire) Result {
		l.mu.Lock()
		k := fireKey{f.Execution.TriggerID, f.Execution.ScheduledAt}
		l.runs[k] = append(l.runs[k], node)
		l.mu.Unlock()
		return nodeDispatcher{r, node}.Dispatch(ctx, f)
	})
}

// entries copies the ledger.
func (l *fireLedger) entries() map[fireKey][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[fireKey][]string, len(l.runs))
	for k, nodes := range l.runs {
		out[k] = slices.Clone(nodes)
	}
	return out
}

// nodeDispatcher tags the recorder's runs with a node name.
type nodeDispatcher struct {
	r    *recorder
	node string
}

func (d nodeDispatcher) Dispatch(ctx context.Context, f *Fire) Result {
	r := d.r
	r.mu.Lock()
	k := fireKey{f.Execution.TriggerID, f.Execution.ScheduledAt}
	if f.Execution.Cause != store.CauseRetry && f.Execution.Cause != store.CauseRecovery {
		r.runs[k] = append(r.runs[k], d.node)
	}
	cp := *f.Execution
	r.execs = append(r.execs, &cp)
	behave := r.behave
	r.mu.Unlock()
	select {
	case r.started <- f:
	default:
	}
	if behave != nil {
		return behave(ctx, f)
	}
	return Result{Message: "ok"}
}

// duplicates returns the fires that ran more than once.
func (r *recorder) duplicates() []fireKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dup []fireKey
	for k, nodes := range r.runs {
		if len(nodes) > 1 {
			dup = append(dup, k)
		}
	}
	return dup
}

func (r *recorder) ran(k fireKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs[k]) > 0
}

// newEngine makes a node on st that dispatches to r.
func newEngine(t *testing.T, st store.Store, r *recorder, node string, clk clock.Clock, tune func(*Config)) *Engine {
	t.Helper()
	cfg := Config{Store: st, Dispatcher: nodeDispatcher{r, node}, NodeID: node, Clock: clk, Logger: testLogger(t),
		PollInterval: 50 * time.Millisecond, LookAhead: 500 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, NodeTimeout: time.Second, DrainTimeout: 5 * time.Second}
	if _, fake := clk.(*clock.Fake); fake {
		cfg.CompleteLinger = -1 // its timer would wait for the test to move the clock
	}
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.signals = newTestSignals()
	return e
}

func startEngine(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
}

// insertJob stores a job with the given options.
func insertJob(t *testing.T, st store.Store, name string, opts func(*store.Job)) *store.Job {
	t.Helper()
	j := &store.Job{Group: "test", Name: name, TargetKind: store.TargetLocal, Handler: "h",
		Concurrency: store.ConcurrencyAllow, Enabled: true}
	if opts != nil {
		opts(j)
	}
	if err := st.JobInsert(context.Background(), j); err != nil {
		t.Fatalf("insert job %s: %v", name, err)
	}
	return j
}

// insertTrigger stores a trigger of the job with schedule s starting at start, its first
// fire time computed as the embedding API does.
func insertTrigger(t *testing.T, st store.Store, job *store.Job, name string, s schedule.Schedule, start time.Time, opts func(*store.Trigger)) *store.Trigger {
	t.Helper()
	tr := &schedule.Trigger{Schedule: s, Start: start}
	first, err := tr.ComputeFirst(nil)
	if err != nil {
		t.Fatalf("trigger %s: %v", name, err)
	}
	row := &store.Trigger{JobID: job.ID, Group: "test", Name: name, Kind: store.TriggerKind(s.Kind()),
		Spec: schedule.EncodeSpec(s), TimeZone: "UTC", StartAt: start.UnixMilli(), Priority: 5,
		MisfirePolicy: schedule.MisfireSmart.String(), State: store.TriggerWaiting, NextFireAt: first.UnixMilli()}
	if opts != nil {
		opts(row)
	}
	if err := st.TriggerInsert(context.Background(), row); err != nil {
		t.Fatalf("insert trigger %s: %v", name, err)
	}
	return row
}

// waitFor reads n values from ch, failing after a generous real-time limit: the limit only
// catches a hung test, the test itself waits on the engine's signals.
func waitFor[T any](t *testing.T, what string, ch <-chan T, n int) []T {
	t.Helper()
	var got []T
	deadline := time.After(60 * time.Second)
	for len(got) < n {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-deadline:
			t.Fatalf("timed out waiting for %s: got %d of %d", what, len(got), n)
		}
	}
	return got
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func describe(k fireKey) string {
	return fmt.Sprintf("trigger %d at %s", k.trigger, time.UnixMilli(k.scheduledAt).UTC().Format("15:04:05.000"))
}

// testLogger sends a node's logs to the test's output, shown when the test fails or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recoverWhileLeading runs the leader duty the engine's tests need, dead-node recovery, as
// maintenance.NodeRecovery runs it in a server: every heartbeat while the node leads, which
// it learns from the node's leadership.
func recoverWhileLeading(t *testing.T, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	sub := e.Leadership().Listen()
	go func() {
		defer close(done)
		defer sub.Stop()
		leading := false
		tick := e.clock.NewTimer(e.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case tr := <-sub.C():
				leading = tr.Leader
			case <-tick.C():
				tick.Reset(e.cfg.HeartbeatInterval)
			}
			if leading {
				if err := e.RecoverDeadNodes(ctx); err != nil && ctx.Err() == nil {
					t.Logf("recovering dead nodes: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
