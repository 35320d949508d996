package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// The tests in this file run a node on a fake clock: they move time only when every loop of
// the node sleeps on it, and wait for the node's signals, never for real time.

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// loopTimers is how many timers an idle node sleeps on: acquirer, firer, cluster duties, kill
// requests.
const loopTimers = 4

// fakeNode is a node on a fake clock.
type fakeNode struct {
	t   *testing.T
	st  store.Store
	clk *clock.Fake
	e   *Engine
	rec *recorder
}

func newFakeNode(t *testing.T, dialect string, behave func(context.Context, *Fire) Result, tune ...func(*Config)) *fakeNode {
	rec := newRecorder()
	rec.behave = behave
	return newFakeNodeOn(t, openStore(t, dialect), rec, tune...)
}

// newFakeNodeOn is newFakeNode over a given store (one that injects faults, say) and recorder.
func newFakeNodeOn(t *testing.T, st store.Store, rec *recorder, tune ...func(*Config)) *fakeNode {
	clk := clock.NewFake(t0)
	e := newEngine(t, st, rec, "node", clk, func(c *Config) {
		c.PollInterval = 100 * time.Millisecond
		c.LookAhead = 100 * time.Millisecond
		c.HeartbeatInterval = time.Hour // keeps cluster duties out of the way
		c.NodeTimeout = 2 * time.Hour
		c.Acquirers = 1 // one acquisition timer among the loopTimers
		for _, f := range tune {
			f(c)
		}
	})
	return &fakeNode{t: t, st: st, clk: clk, e: e, rec: rec}
}

func (n *fakeNode) start() { startEngine(n.t, n.e) }

// advance moves the fake time by d once the node is idle.
func (n *fakeNode) advance(d time.Duration) {
	n.t.Helper()
	if !n.clk.WaitForTimers(loopTimers, nil) {
		n.t.Fatal("node never went idle")
	}
	// Step in poll-sized increments so each loop wakes, works and sleeps again in order.
	for step := n.e.cfg.PollInterval; d > 0; d -= step {
		n.clk.Advance(min(step, d))
		n.clk.WaitForTimers(loopTimers, nil)
	}
}

// completed waits for k results to be written.
func (n *fakeNode) completed(k int) []int64 {
	n.t.Helper()
	return waitFor(n.t, "results", n.e.signals.completed, k)
}

func (n *fakeNode) executions(job *store.Job) []*store.Execution {
	n.t.Helper()
	execs, err := n.st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: job.ID, Limit: 1000})
	if err != nil {
		n.t.Fatal(err)
	}
	slices.SortFunc(execs, func(a, b *store.Execution) int { return int(a.ID - b.ID) })
	return execs
}

// blockFireAt is a behaviour that holds the fire due at the instant until release is closed
// (or its context ends), and lets the others succeed at once.
func blockFireAt(at time.Time, release <-chan struct{}) func(context.Context, *Fire) Result {
	return func(ctx context.Context, f *Fire) Result {
		if f.Execution.ScheduledAt == ms(at) {
			select {
			case <-release:
			case <-ctx.Done():
				return Result{Err: ctx.Err()}
			}
		}
		return Result{}
	}
}

func states(execs []*store.Execution) []store.ExecutionState {
	out := make([]store.ExecutionState, len(execs))
	for i, ex := range execs {
		out[i] = ex.State
	}
	return out
}

func TestRetriesWithBackoff(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, func(context.Context, *Fire) Result { return Result{Err: errors.New("boom")} })
		job := insertJob(t, n.st, "flaky", func(j *store.Job) { j.MaxRetries = 2; j.RetryBackoffMs = 10_000 })
		insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()

		n.advance(time.Second)
		n.completed(1)
		n.advance(10 * time.Second) // first retry after the backoff
		n.completed(1)
		n.advance(20 * time.Second) // second retry after twice the backoff
		n.completed(1)
		n.advance(time.Minute) // no third retry

		execs := n.executions(job)
		if len(execs) != 3 {
			t.Fatalf("%d executions, want the fire and 2 retries", len(execs))
		}
		want := []struct {
			attempt int
			cause   store.ExecutionCause
			at      time.Duration
		}{{0, store.CauseSchedule, time.Second}, {1, store.CauseRetry, 11 * time.Second}, {2, store.CauseRetry, 31 * time.Second}}
		for i, w := range want {
			ex := execs[i]
			if ex.Attempt != w.attempt || ex.Cause != w.cause || ex.ScheduledAt != ms(t0.Add(w.at)) || ex.State != store.ExecFailed {
				t.Errorf("execution %d: attempt %d cause %s scheduled %s state %s; want attempt %d cause %s at t0+%s, failed",
					i, ex.Attempt, ex.Cause, time.UnixMilli(ex.ScheduledAt).UTC(), ex.State, w.attempt, w.cause, w.at)
			}
			if ex.HandleMsg != "boom" {
				t.Errorf("execution %d: handle message %q, want the handler's error", i, ex.HandleMsg)
			}
		}
	})
}

func TestTimeoutCancelsHandler(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, func(ctx context.Context, _ *Fire) Result {
			<-ctx.Done()
			return Result{Err: ctx.Err()}
		})
		job := insertJob(t, n.st, "slow", func(j *store.Job) { j.TimeoutMs = 5000 })
		insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()
		n.advance(time.Second)
		waitFor(t, "the handler to start", n.rec.started, 1)
		n.advance(5 * time.Second)
		n.completed(1)
		execs := n.executions(job)
		if len(execs) != 1 || execs[0].State != store.ExecTimedOut {
			t.Fatalf("executions %v, want one timed_out", states(execs))
		}
	})
}

// TestConcurrencyPolicies fires a job every second while its first run blocks.
func TestConcurrencyPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy store.ConcurrencyPolicy
		// states of the first two fires once both are finished
		want []store.ExecutionState
		// whether the second fire starts while the first still blocks
		overlap bool
	}{
		{store.ConcurrencyAllow, []store.ExecutionState{store.ExecSucceeded, store.ExecSucceeded}, true},
		{store.ConcurrencySerial, []store.ExecutionState{store.ExecSucceeded, store.ExecSucceeded}, false},
		{store.ConcurrencyDiscard, []store.ExecutionState{store.ExecSucceeded, store.ExecSkipped}, false},
		{store.ConcurrencyReplace, []store.ExecutionState{store.ExecCanceled, store.ExecSucceeded}, true},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) {
				release := make(chan struct{})
				n := newFakeNode(t, dialect, blockFireAt(t0.Add(time.Second), release))
				job := insertJob(t, n.st, "job", func(j *store.Job) { j.Concurrency = tc.policy })
				insertTrigger(t, n.st, job, "twice", schedule.Simple{Interval: time.Second, RepeatCount: 1}, t0.Add(time.Second), nil)
				n.start()

				n.advance(time.Second)
				waitFor(t, "the first fire to start", n.rec.started, 1)
				n.advance(time.Second) // the second fire is due while the first blocks
				switch tc.policy {
				case store.ConcurrencyAllow:
					waitFor(t, "the second fire to start", n.rec.started, 1)
					close(release)
					n.completed(2)
				case store.ConcurrencySerial:
					select {
					case <-n.rec.started:
						t.Fatal("serial: the second fire started while the first ran")
					default:
					}
					close(release)
					n.completed(1)
					waitFor(t, "the queued fire to start", n.rec.started, 1)
					n.completed(1)
				case store.ConcurrencyDiscard:
					n.completed(1) // the skipped fire
					close(release)
					n.completed(1)
				case store.ConcurrencyReplace:
					waitFor(t, "the replacing fire to start", n.rec.started, 1)
					n.completed(2)
				}
				if got := states(n.executions(job)); !slices.Equal(got, tc.want) {
					t.Errorf("states %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestPauseResume pauses a trigger group (also holding a trigger added to it later), then
// resumes it: the fires missed while paused follow the misfire policy, the rest fire.
func TestPauseResume(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, nil)
		ctx := context.Background()
		job := insertJob(t, n.st, "job", nil)
		if _, err := n.st.TriggersPause(ctx, store.TriggerSelector{Group: "test"}); err != nil {
			t.Fatal(err)
		}
		late := insertTrigger(t, n.st, job, "added-later", schedule.Simple{Interval: time.Second, RepeatCount: schedule.RepeatForever}, t0.Add(time.Second), nil)
		row, err := n.st.TriggerGet(ctx, late.ID)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != store.TriggerPaused {
			t.Fatalf("trigger added to a paused group is %s, want paused", row.State)
		}
		n.start()
		n.advance(3 * time.Second)
		if got := len(n.executions(job)); got != 0 {
			t.Fatalf("%d fires while paused, want 0", got)
		}
		if _, err := n.st.TriggersResume(ctx, store.TriggerSelector{Group: "test"}); err != nil {
			t.Fatal(err)
		}
		n.e.Wake()
		// Missed by 2 s, under the misfire threshold: the missed fires run, late, then the rest.
		n.completed(3)
		n.advance(time.Second)
		n.completed(1)
		var at []int64
		for _, ex := range n.executions(job) {
			at = append(at, ex.ScheduledAt)
		}
		want := []int64{ms(t0.Add(time.Second)), ms(t0.Add(2 * time.Second)), ms(t0.Add(3 * time.Second)), ms(t0.Add(4 * time.Second))}
		if !slices.Equal(at[:min(len(at), 4)], want) {
			t.Errorf("fires %v, want %v", fmtTimes(at), fmtTimes(want))
		}
	})
}

// TestCalendarExcludesFires stores a weekly calendar that excludes the trigger's next day.
func TestCalendarExcludesFires(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		// Poll hourly so that two days pass in few steps.
		n := newFakeNode(t, dialect, nil, func(c *Config) { c.PollInterval = time.Hour })
		ctx := context.Background()
		// t0 is a Monday; exclude Tuesdays (3 in Quartz's numbering, Sunday = 1).
		if err := n.st.CalendarPut(ctx, &store.Calendar{Name: "no-tuesday", Spec: "weekly:3"}); err != nil {
			t.Fatal(err)
		}
		job := insertJob(t, n.st, "daily", nil)
		insertTrigger(t, n.st, job, "noon", schedule.Simple{Interval: 24 * time.Hour, RepeatCount: schedule.RepeatForever},
			t0.Add(24*time.Hour), func(r *store.Trigger) { r.CalendarName = "no-tuesday" })
		n.start()
		// The stored first fire (Tuesday) was computed before the trigger had the calendar,
		// as if the calendar changed later: the engine must skip it. Run two days.
		n.advance(49 * time.Hour)
		n.completed(1)
		execs := n.executions(job)
		for _, ex := range execs {
			if time.UnixMilli(ex.ScheduledAt).UTC().Weekday() == time.Tuesday {
				t.Errorf("fired on Tuesday %s despite the calendar", time.UnixMilli(ex.ScheduledAt).UTC())
			}
		}
		if len(execs) != 1 || execs[0].ScheduledAt != ms(t0.Add(48*time.Hour)) {
			t.Errorf("fires %v, want only Wednesday noon", len(execs))
		}
	})
}

// TestStartLead checks that a fire is claimed StartLead ahead of its time and its handler
// still starts at its due millisecond, and that a serial job's fire is claimed only when due.
func TestStartLead(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		var mu sync.Mutex
		var startedAt []time.Time
		var n *fakeNode
		n = newFakeNode(t, dialect, func(context.Context, *Fire) Result {
			mu.Lock()
			defer mu.Unlock()
			startedAt = append(startedAt, n.clk.Now())
			return Result{}
		}, func(c *Config) { c.StartLead = 50 * time.Millisecond })
		free := insertJob(t, n.st, "free", nil)
		serial := insertJob(t, n.st, "serial", func(j *store.Job) { j.Concurrency = store.ConcurrencySerial })
		due := t0.Add(time.Second)
		insertTrigger(t, n.st, free, "free", schedule.Simple{}, due, nil)
		insertTrigger(t, n.st, serial, "serial", schedule.Simple{}, due, nil)
		n.start()

		n.advance(950 * time.Millisecond)
		claimed := waitFor(t, "claimed fires", n.e.signals.claimed, 1)
		free0, serial0 := n.executions(free), n.executions(serial)
		if len(free0) != 1 || free0[0].ID != claimed[0] || free0[0].State != store.ExecRunning || free0[0].FiredAt != ms(due) {
			t.Fatalf("50 ms ahead, the allow job's fire is %+v; want it running (claimed) with its due time as fired time", free0)
		}
		if len(serial0) != 1 || serial0[0].State != store.ExecAcquired {
			t.Fatalf("50 ms ahead, the serial job's fire is %+v; want it still acquired", serial0)
		}
		select {
		case f := <-n.rec.started:
			t.Fatalf("execution %d started at %s, before its due time %s", f.Execution.ID, n.clk.Now(), due)
		default:
		}

		n.advance(50 * time.Millisecond)
		waitFor(t, "handler starts", n.rec.started, 2)
		n.completed(2)
		mu.Lock()
		defer mu.Unlock()
		for _, at := range startedAt {
			if !at.Equal(due) {
				t.Errorf("a handler started at %s, want its due time %s", at, due)
			}
		}
	})
}
