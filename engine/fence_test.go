package engine

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// lifeOf returns the life the running engine is in.
func lifeOf(e *Engine) store.Owner {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	return e.life.owner
}

// TestRestartSameIDRecoversEarlierLife crashes a node that runs a job requesting recovery and
// holds acquired fires, and starts it again under the same node id, alone: no leader will
// ever find the id silent, since the new life keeps its row fresh. The new life recovers the
// old one's work before it acquires anything — by the time Start returns, nothing live belongs
// to the old life — and then runs it: the slow job again with cause recovery, and every fire
// the old life held but had not run, once.
func TestRestartSameIDRecoversEarlierLife(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		sc := setUpCrash(t, st)
		old, deadRuns := crashVictim(t, st, sc, "node")

		rec := newRecorder()
		second := newEngine(t, st, rec, "node", clock.Real{}, nil)
		startEngine(t, second)
		if lifeOf(second) == old {
			t.Fatal("the restarted node reused its incarnation")
		}
		for _, job := range []*store.Job{sc.slow, sc.fast} {
			xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: job.ID, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range xs {
				if !x.State.Terminal() && store.OwnerOf(x) == old {
					t.Errorf("execution %d (%s at %d) still %s by the first life after the second started", x.ID, job.Name, x.ScheduledAt, x.State)
				}
			}
		}
		lost, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: sc.slow.ID, State: store.ExecLost})
		if err != nil {
			t.Fatal(err)
		}
		if len(lost) != 1 || store.OwnerOf(lost[0]) != old {
			t.Fatalf("lost runs of the slow job: %+v, want the first life's", lost)
		}

		want := 1 // the slow job's recovery run
		for i := 0; i < 10; i++ {
			if !deadRuns[fireKey{sc.fastTr.ID, ms(sc.fastFirst.Add(time.Duration(i) * sc.fastInterval))}] {
				want++
			}
		}
		waitFor(t, "the second life's fires", rec.started, want)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var recovery bool
		for _, x := range rec.execs {
			recovery = recovery || (x.JobID == sc.slow.ID && x.Cause == store.CauseRecovery && x.ScheduledAt == sc.slowTr.NextFireAt)
		}
		if !recovery {
			t.Error("the slow job (requests recovery) was not run again with cause recovery")
		}
		for k, nodes := range rec.runs {
			if deadRuns[k] || len(nodes) > 1 {
				t.Errorf("%s ran again (%d times in the second life)", describe(k), len(nodes))
			}
		}
	})
}

// TestFrozenNodeStartsNothing freezes a node the way SIGSTOP does — its fake clock stands
// still, so none of its loops runs — while it runs an in-process job, holds acquired fires
// and has claimed one fire ahead of its millisecond. The leader declares it dead and
// recovers its work. Then the node resumes with its clock past the node timeout, as a
// process does after SIGCONT: it must start none of the fires its dead life held (the claimed
// one was declared lost, the others handed back), cancel the run the leader declared lost,
// and join again as a new life.
func TestFrozenNodeStartsNothing(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		clk := clock.NewFake(t0)
		rec := newRecorder()
		canceled, release := make(chan *Fire, 1), make(chan struct{})
		rec.behave = func(ctx context.Context, f *Fire) Result {
			if f.Job.Handler == "block" {
				select {
				case <-ctx.Done():
					canceled <- f
					return Result{Err: ctx.Err()}
				case <-release: // the test ends
				}
			}
			return Result{}
		}
		victim := newEngine(t, st, rec, "victim", clk, func(c *Config) {
			c.LookAhead, c.PollInterval = 10*time.Second, 100*time.Millisecond
			c.HeartbeatInterval, c.NodeTimeout, c.Acquirers = time.Second, 3*time.Second, 1
		})
		slow := insertJob(t, st, "slow", func(j *store.Job) { j.Handler = "block" })
		fast := insertJob(t, st, "fast", nil)
		insertTrigger(t, st, slow, "slow", schedule.Simple{}, t0.Add(500*time.Millisecond), nil)
		fastTr := insertTrigger(t, st, fast, "fast", schedule.Simple{Interval: time.Second, RepeatCount: 9}, t0.Add(time.Second), nil)
		startEngine(t, victim)
		t.Cleanup(func() { close(release) }) // before the stop, which would wait for the handler
		old := lifeOf(victim)
		if n := waitFor(t, "the first acquisition", victim.signals.acquired, 1)[0]; n != 11 {
			t.Fatalf("the first round acquired %d fires, want 11 (the slow one and 10 fast ones)", n)
		}

		// The slow job runs; the first fast fire is claimed StartLead ahead and waits for its
		// millisecond.
		clk.WaitForTimers(loopTimers, nil)
		clk.Advance(500 * time.Millisecond)
		if f := waitFor(t, "the slow job to start", rec.started, 1)[0]; f.Job.ID != slow.ID {
			t.Fatalf("started job %d, want the slow job", f.Job.ID)
		}
		clk.WaitForTimers(loopTimers, nil)
		clk.Advance(time.Second - 500*time.Millisecond - victim.cfg.StartLead)
		waitFor(t, "the slow fire and the first fast fire to be claimed", victim.signals.claimed, 2)
		clk.WaitForTimers(loopTimers+1, nil) // the loops, and the claimed fire waiting for its millisecond

		// Frozen: the clock stands still. The leader finds the node silent and recovers it.
		leader := newEngine(t, st, newRecorder(), "leader", clock.Real{}, func(c *Config) {
			c.HeartbeatInterval, c.NodeTimeout = 500*time.Microsecond, time.Millisecond
		})
		// It has seen the cluster all along, and sees it now.
		leader.seeing.Store(time.Now().Add(-time.Hour).UnixMilli())
		leader.lastBeat.Store(time.Now().Add(time.Hour).UnixMilli())
		// The victim's last heartbeat (its first tick, or one the advances above set off) may
		// still be landing as it freezes: a pass that finds its row fresh declares nothing, and
		// the leader's duty would simply look again on its next tick, as this loop does.
		for deadline := time.Now().Add(time.Minute); ; {
			if err := leader.RecoverDeadNodes(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-leader.signals.recovered:
				if got != "victim" {
					t.Fatalf("recovered %q, want the victim", got)
				}
			case <-time.After(20 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("the leader never recovered the victim")
				}
				continue
			}
			break
		}

		// SIGCONT: the node's time jumps past the node timeout, and every timer fires.
		clk.Advance(5 * time.Second)
		if got := waitFor(t, "the node to join again", victim.signals.rejoined, 1)[0]; got == old {
			t.Fatal("the node joined again as the same life")
		}
		select {
		case f := <-canceled:
			if f.Job.ID != slow.ID {
				t.Fatalf("canceled job %d, want the slow job", f.Job.ID)
			}
		default:
			t.Error("the in-process run the leader declared lost was not canceled")
		}
		firstFast := fireKey{fastTr.ID, ms(t0.Add(time.Second))}
		if rec.ran(firstFast) {
			t.Errorf("%s ran: the dead life started the fire it had claimed, which the leader declared lost", describe(firstFast))
		}
		for _, k := range rec.duplicates() {
			t.Errorf("ran twice: %s", describe(k))
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, x := range rec.execs {
			if x.JobID == fast.ID && store.OwnerOf(x) == old {
				t.Errorf("the dead life started the fast fire at %s", time.UnixMilli(x.ScheduledAt).UTC().Format("15:04:05.000"))
			}
		}
	})
}

// TestMisfireOnReturnedFires plants fires that a node took ahead of time and that went back
// to pending when it died, minutes late now, while their triggers went on in other hands (the
// next fire is a minute ahead). Each trigger's misfire policy decides: do_nothing skips the
// missed fires, fire_now fires once for them, ignore fires each; a returned fire late by less
// than the threshold fires whatever the policy. No trigger is rewound, so no slot fires twice.
func TestMisfireOnReturnedFires(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		n := newFakeNode(t, dialect, nil, func(c *Config) { c.MisfireThreshold = time.Minute })
		job := insertJob(t, n.st, "job", nil)
		cron, err := schedule.ParseCron("0 * * * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		trigger := func(name string, p schedule.MisfirePolicy) *store.Trigger {
			return insertTrigger(t, n.st, job, name, cron, t0.Add(-time.Hour), func(r *store.Trigger) {
				r.MisfirePolicy, r.NextFireAt = p.String(), ms(t0.Add(time.Minute))
			})
		}
		doNothing, fireNow, ignore := trigger("do-nothing", schedule.MisfireDoNothing), trigger("fire-now", schedule.MisfireFireNow),
			trigger("ignore", schedule.MisfireIgnore)
		returned := func(tr *store.Trigger, ago time.Duration) *store.Execution {
			return &store.Execution{JobID: job.ID, TriggerID: tr.ID, ScheduledAt: ms(t0.Add(-ago)), Cause: store.CauseSchedule, State: store.ExecPending}
		}
		var fires []*store.Execution
		for _, tr := range []*store.Trigger{doNothing, fireNow, ignore} {
			fires = append(fires, returned(tr, 3*time.Minute), returned(tr, 2*time.Minute))
		}
		withinThreshold := returned(doNothing, 30*time.Second)
		fires = append(fires, withinThreshold)
		if _, err := n.st.ExecutionsInsert(ctx, fires); err != nil {
			t.Fatal(err)
		}
		n.start()
		n.completed(len(fires))

		ran := func(tr *store.Trigger, ago time.Duration) bool { return n.rec.ran(fireKey{tr.ID, ms(t0.Add(-ago))}) }
		for _, c := range []struct {
			tr   *store.Trigger
			ago  time.Duration
			runs bool
		}{
			{doNothing, 3 * time.Minute, false}, {doNothing, 2 * time.Minute, false}, {doNothing, 30 * time.Second, true},
			{fireNow, 3 * time.Minute, false}, {fireNow, 2 * time.Minute, true},
			{ignore, 3 * time.Minute, true}, {ignore, 2 * time.Minute, true},
		} {
			if got := ran(c.tr, c.ago); got != c.runs {
				t.Errorf("trigger %s, fire %s ago: ran %v, want %v", c.tr.Name, c.ago, got, c.runs)
			}
		}
		for _, x := range n.executions(job) {
			runs := n.rec.ran(fireKey{x.TriggerID, x.ScheduledAt})
			switch {
			case runs && x.State != store.ExecSucceeded:
				t.Errorf("fire %d ran but is %s", x.ID, x.State)
			case !runs && (x.State != store.ExecSkipped || !strings.Contains(x.HandleMsg, "misfire policy")):
				t.Errorf("fire %d did not run: %s %q, want skipped by the misfire policy", x.ID, x.State, x.HandleMsg)
			}
		}
		for _, tr := range []*store.Trigger{doNothing, fireNow, ignore} {
			got, err := n.st.TriggerGet(ctx, tr.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.NextFireAt != tr.NextFireAt {
				t.Errorf("trigger %s moved to %d, want it left at %d", tr.Name, got.NextFireAt, tr.NextFireAt)
			}
		}
	})
}

// TestStopWritesResultsThatWake stops a node while a handler runs whose failure calls for a
// retry. The result is written during the drain, and the retry it inserts wakes the acquirer;
// the wake-up must not wait for the lock the stop holds while it waits for the result writer.
func TestStopWritesResultsThatWake(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		release := make(chan struct{})
		n := newFakeNode(t, dialect, func(context.Context, *Fire) Result {
			<-release
			return Result{Err: errors.New("boom")}
		})
		job := insertJob(t, n.st, "flaky", func(j *store.Job) { j.MaxRetries = 1; j.RetryBackoffMs = 60_000 })
		insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()
		n.advance(time.Second)
		waitFor(t, "the handler to start", n.rec.started, 1)

		stopped := make(chan error, 1)
		go func() { stopped <- n.e.Stop(context.Background()) }()
		for n.e.lifeMu.TryLock() { // until the stop holds the lock, draining
			n.e.lifeMu.Unlock()
			runtime.Gosched()
		}
		close(release)
		if err := waitFor(t, "the stop", stopped, 1)[0]; err != nil {
			t.Fatal(err)
		}
		execs := n.executions(job)
		if len(execs) != 2 || execs[0].State != store.ExecFailed || execs[1].Cause != store.CauseRetry {
			t.Fatalf("executions %v, want the failure and its retry", states(execs))
		}
	})
}

// heartbeatFailsStore is the real store whose heartbeats fail while fail is set, as when the
// database or the network to it is down.
// A test driving heartbeats by hand can set held: it runs inside each heartbeat, as the
// network holding it.
type heartbeatFailsStore struct {
	store.Store
	fail atomic.Bool
	held func()
}

func (s *heartbeatFailsStore) NodeHeartbeat(ctx context.Context, o store.Owner, name string) (*store.Node, error) {
	if s.fail.Load() {
		return nil, errors.New("connection refused")
	}
	if s.held != nil {
		s.held()
	}
	return s.Store.NodeHeartbeat(ctx, o, name)
}

// TestNoRecoveryRightAfterOutage: after its own heartbeats failed (the database was out of
// reach), a node declares no one dead until its heartbeats have succeeded for a whole node
// timeout, since every peer looks silent after an outage that hit them all; then it recovers
// a node that beat after the outage and fell silent again, and only once the grace has passed
// one that stayed silent since before it. A node whose heartbeats hang (no answer, no
// failure) declares no one dead either.
func TestNoRecoveryRightAfterOutage(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := &heartbeatFailsStore{Store: openStore(t, dialect)}
		ghostLife, beatenLife := store.Owner{Node: "ghost", Incarnation: "g"}, store.Owner{Node: "beaten", Incarnation: "b"}
		ghost, err := st.NodeRegister(ctx, ghostLife, "ghost")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.NodeRegister(ctx, beatenLife, "beaten"); err != nil {
			t.Fatal(err)
		}
		clk := clock.NewFake(t0)
		const timeout = 50 * time.Millisecond
		// The node's cluster duties are driven by hand: its loops do not run.
		e := newEngine(t, st, newRecorder(), "node", clk, func(c *Config) {
			c.HeartbeatInterval, c.NodeTimeout = 10*time.Millisecond, timeout
		})
		l := &lifecycle{owner: store.Owner{Node: "node", Incarnation: "i"}, fence: newFence(), ctx: ctx}
		if _, err := st.NodeRegister(ctx, l.owner, "node"); err != nil {
			t.Fatal(err)
		}
		silentPast := func(lastSeen int64) { // by the database clock
			for {
				now, err := st.DBNow(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if now > lastSeen+timeout.Milliseconds() {
					return
				}
				runtime.Gosched()
			}
		}
		silentPast(ghost.LastSeen)
		recovered := func() []string {
			t.Helper()
			if err := e.RecoverDeadNodes(ctx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				select {
				case n := <-e.signals.recovered:
					got = append(got, n)
				default:
					slices.Sort(got)
					return got
				}
			}
		}

		// beatFor lets d pass, the node beating every heartbeat interval.
		beatFor := func(d time.Duration) {
			for passed := time.Duration(0); passed < d; passed += e.cfg.HeartbeatInterval {
				clk.Advance(e.cfg.HeartbeatInterval)
				e.clusterTick(l)
			}
		}

		e.clusterTick(l)
		clk.Advance(timeout) // the next heartbeat hung: it neither failed nor succeeded since
		if got := recovered(); len(got) > 0 {
			t.Fatalf("recovered %v while the node's own heartbeats hung", got)
		}
		st.fail.Store(true)
		e.clusterTick(l)
		st.fail.Store(false)
		e.clusterTick(l)
		if got := recovered(); len(got) > 0 {
			t.Fatalf("recovered %v right after the node's own outage", got)
		}
		// One node beats after the outage, then falls silent: the node timeout judges it.
		beaten, err := st.NodeHeartbeat(ctx, beatenLife, "beaten")
		if err != nil {
			t.Fatal(err)
		}
		silentPast(beaten.LastSeen)
		beatFor(timeout)
		if got := recovered(); !slices.Equal(got, []string{"beaten"}) {
			t.Fatalf("recovered %v once the node had seen the cluster for a node timeout, want the node silent since it beat after the outage", got)
		}
		// The ghost has not beaten since the outage: it gets the grace, and no more.
		beatFor(e.outageGrace() - timeout - e.cfg.HeartbeatInterval)
		if got := recovered(); len(got) > 0 {
			t.Fatalf("recovered %v within the grace after the outage", got)
		}
		beatFor(e.cfg.HeartbeatInterval)
		if got := recovered(); !slices.Equal(got, []string{"ghost"}) {
			t.Fatalf("recovered %v once the grace had passed, want the ghost", got)
		}
	})
}

// TestSeesDatabaseFor: the streak the executor sweep waits for starts again after a failed
// heartbeat, and counts only successful beats without a gap.
func TestSeesDatabaseFor(t *testing.T) {
	ctx := context.Background()
	st := &heartbeatFailsStore{Store: openStore(t, "sqlite")}
	clk := clock.NewFake(t0)
	const interval, timeout = 10 * time.Millisecond, 50 * time.Millisecond
	e := newEngine(t, st, newRecorder(), "node", clk, func(c *Config) {
		c.HeartbeatInterval, c.NodeTimeout = interval, timeout
	})
	l := &lifecycle{owner: store.Owner{Node: "node", Incarnation: "i"}, fence: newFence(), ctx: ctx}
	if _, err := st.NodeRegister(ctx, l.owner, "node"); err != nil {
		t.Fatal(err)
	}
	beats := func(n int) {
		for range n {
			e.clusterTick(l)
			clk.Advance(interval)
		}
	}
	beats(4)
	if !e.SeesDatabaseFor(3 * interval) {
		t.Fatal("four good beats: want the database seen for three intervals")
	}
	st.fail.Store(true)
	e.clusterTick(l)
	st.fail.Store(false)
	beats(2)
	if e.SeesDatabaseFor(3 * interval) {
		t.Fatal("two beats after a failed one: want the streak started anew")
	}
	beats(2)
	if !e.SeesDatabaseFor(3 * interval) {
		t.Fatal("four beats after the failed one: want the database seen for three intervals again")
	}
	clk.Advance(timeout) // silence: the last success is too old to speak for now
	if e.SeesDatabaseFor(3 * interval) {
		t.Fatal("no beat for a node timeout: want the database not seen")
	}

	// A judgment stands while the node's view goes on and its last beat is recent.
	beats(5)
	j, ok := e.JudgeSilence(3*interval, interval)
	if !ok || !j.Holds() {
		t.Fatal("five good beats: want the node to judge a silence of three intervals")
	}
	// A beat held by the network through an outage and answered after it succeeds, but
	// shows nothing of the outage: the view starts anew, and the judgment no longer holds.
	st.held = func() { clk.Advance(2 * interval) }
	e.clusterTick(l)
	st.held = nil
	if j.Holds() {
		t.Fatal("a judgment taken before a beat held through an outage still holds after it")
	}
	beats(2)
	if e.SeesDatabaseFor(3 * interval) {
		t.Fatal("two beats after a held one: want the streak started anew")
	}
	// A gap between beats that could hide an outage from the peers' silence does too.
	beats(4)
	clk.Advance(e.beatGap())
	beats(2)
	if e.SeesDatabaseFor(3 * interval) {
		t.Fatal("two beats after a gap: want the streak started anew")
	}
	beats(2)
	if j, ok := e.JudgeSilence(3*interval, interval); !ok || !j.Holds() {
		t.Fatal("four beats after the gap: want the node to judge again")
	}
	// A judgment's answer comes too late once the last beat is older than the peers' silence
	// allows.
	j, _ = e.JudgeSilence(3*interval, interval)
	clk.Advance(3*interval - interval - interval/4 + time.Millisecond)
	if j.Holds() {
		t.Fatal("a judgment still holds when the node has not beaten for as long as a peer's silence needs")
	}
}
