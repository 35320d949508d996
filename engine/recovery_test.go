package engine

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRecoveryLosesOnlyItsOwnRuns plants the running work of a node that died: an in-process
// run of a job with alarm targets, one of a job without, a run handed to an executor that
// accepted it, and one the node was sending when it died (its address recorded, no executor's
// acceptance). The leader that recovers the node marks the in-process runs lost, makes the
// alarm of the watched one pending (each final failure alarms), leaves the executor's run
// running (it goes on there and reports to any node), and marks the unaccepted one lost and
// fires it again, as its job requests recovery: no executor has it, so nobody else would.
func TestRecoveryLosesOnlyItsOwnRuns(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		watched := insertJob(t, st, "watched", func(j *store.Job) { j.AlarmTargets = []string{"ops@example.com"} })
		quiet := insertJob(t, st, "quiet", nil)
		remote := insertJob(t, st, "remote", nil)
		sending := insertJob(t, st, "sending", func(j *store.Job) { j.RequestsRecovery = true })
		ghost := store.Owner{Node: "ghost", Incarnation: "g1"}
		if _, err := st.NodeRegister(ctx, ghost, "ghost"); err != nil {
			t.Fatal(err)
		}
		run := func(job *store.Job) *store.Execution {
			return &store.Execution{JobID: job.ID, ScheduledAt: 1000, Cause: store.CauseManual, Node: ghost.Node,
				Incarnation: ghost.Incarnation, State: store.ExecRunning}
		}
		w, q, r, s := run(watched), run(quiet), run(remote), run(sending)
		if _, err := st.ExecutionsInsert(ctx, []*store.Execution{w, q, r, s}); err != nil {
			t.Fatal(err)
		}
		for _, x := range []*store.Execution{r, s} {
			if ok, err := st.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{{Owner: ghost, ID: x.ID, Address: "http://executor:9999", Message: "sent"}}); err != nil || !ok[0] {
				t.Fatalf("record the dispatch: %v, %v", ok, err)
			}
		}
		if ok, err := st.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{{Owner: ghost, ID: r.ID, Accepted: true}}); err != nil || !ok[0] {
			t.Fatalf("record the acceptance: %v, %v", ok, err)
		}

		rec := newRecorder()
		survivor := newEngine(t, st, rec, "survivor", clock.Real{}, nil)
		startEngine(t, survivor)
		recoverWhileLeading(t, survivor)
		if got := waitFor(t, "recovery of the dead node", survivor.signals.recovered, 1); got[0] != "ghost" {
			t.Fatalf("recovered %q, want ghost", got[0])
		}

		for _, c := range []struct {
			x     *store.Execution
			state store.ExecutionState
			alarm store.AlarmState
		}{{w, store.ExecLost, store.AlarmPending}, {q, store.ExecLost, store.AlarmNone}, {r, store.ExecRunning, store.AlarmNone},
			{s, store.ExecLost, store.AlarmNone}} {
			got, err := st.ExecutionGet(ctx, c.x.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != c.state || got.AlarmState != c.alarm {
				t.Errorf("execution of job %d: %s with alarm %s, want %s with alarm %s", got.JobID, got.State, got.AlarmState, c.state, c.alarm)
			}
		}
		f := waitFor(t, "the unaccepted run to run again", rec.started, 1)[0]
		if f.Job.ID != sending.ID || f.Execution.Cause != store.CauseRecovery {
			t.Errorf("ran job %d with cause %s, want job %d with cause recovery", f.Job.ID, f.Execution.Cause, sending.ID)
		}
	})
}

// answerLostStore is the real store, except that the first claim of fires is applied and
// then reported as failed, as when the connection drops between the commit and its answer.
type answerLostStore struct {
	store.Store
	lost atomic.Bool
}

func (s *answerLostStore) ExecutionsMarkRunning(ctx context.Context, o store.Owner, ids []int64, firedAt int64) ([]int64, error) {
	won, err := s.Store.ExecutionsMarkRunning(ctx, o, ids, firedAt)
	if err == nil && len(won) > 0 && s.lost.CompareAndSwap(false, true) {
		return nil, errors.New("connection reset (after the commit)")
	}
	return won, err
}

// TestClaimAnswerLost checks that a fire whose claim was applied but reported as failed still
// runs, once: neither stranded as running with no handler nor run twice.
func TestClaimAnswerLost(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := &answerLostStore{Store: openStore(t, dialect)}
		n := newFakeNodeOn(t, st, newRecorder())
		clk, rec := n.clk, n.rec
		job := insertJob(t, st, "job", nil)
		insertTrigger(t, st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()

		n.advance(time.Second)
		clk.WaitForTimers(loopTimers+1, nil) // the loops, and the pause before the claim is retried
		if !st.lost.Load() {
			t.Fatal("the claim never ran")
		}
		clk.Advance(markRetryDelay)
		waitFor(t, "the fire to run", rec.started, 1)
		n.completed(1)
		execs := n.executions(job)
		if len(execs) != 1 || execs[0].State != store.ExecSucceeded {
			t.Fatalf("executions %v, want the one fire succeeded", states(execs))
		}
		if dups := rec.duplicates(); len(dups) > 0 {
			t.Fatalf("ran twice: %v", dups)
		}
	})
}

// claimFailsStore is the real store, except that one claim of fires (the failOn-th) is not
// applied: it fails, as when the connection drops before the statement reaches the database,
// or (lose) it reports the fires taken by another node.
type claimFailsStore struct {
	store.Store
	calls  atomic.Int32
	failOn int32
	lose   bool
}

func (s *claimFailsStore) ExecutionsMarkRunning(ctx context.Context, o store.Owner, ids []int64, firedAt int64) ([]int64, error) {
	if applied, err := s.claim(); !applied {
		return nil, err
	}
	return s.Store.ExecutionsMarkRunning(ctx, o, ids, firedAt)
}

// ExecutionsMarkRunningAlone is the claim of a serial job's fires.
func (s *claimFailsStore) ExecutionsMarkRunningAlone(ctx context.Context, o store.Owner, ids []int64, limits map[int64]int, anyOwner map[int64]bool, firedAt int64) ([]int64, []int64, error) {
	if applied, err := s.claim(); !applied {
		return nil, nil, err
	}
	return s.Store.ExecutionsMarkRunningAlone(ctx, o, ids, limits, anyOwner, firedAt)
}

// claim counts a claim and says whether it reaches the store, or what it fails with.
func (s *claimFailsStore) claim() (bool, error) {
	switch {
	case s.calls.Add(1) != s.failOn:
		return true, nil
	case s.lose:
		return false, nil
	default:
		return false, errors.New("connection reset (before the statement)")
	}
}

// TestSerialQueueSurvivesFailedClaim: fires B and C of a serial job queue behind A; when A
// ends B is started, and its claim fails or is lost to another node. C, queued behind B, must
// not be forgotten: it runs instead of staying acquired by this node until it stops.
func TestSerialQueueSurvivesFailedClaim(t *testing.T) {
	for _, lose := range []bool{false, true} {
		name := map[bool]string{false: "failed", true: "lost"}[lose]
		t.Run(name, func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) {
				testSerialQueueAfterClaim(t, dialect, lose)
			})
		})
	}
}

func testSerialQueueAfterClaim(t *testing.T, dialect string, lose bool) {
	st := &claimFailsStore{Store: openStore(t, dialect), failOn: 2, lose: lose} // A's claim is the first, B's the second
	clk := clock.NewFake(t0)
	rec := newRecorder()
	release := make(chan struct{})
	rec.behave = blockFireAt(t0.Add(time.Second), release)
	e := newEngine(t, st, rec, "node", clk, func(c *Config) {
		c.PollInterval, c.LookAhead = 100*time.Millisecond, 100*time.Millisecond
		c.HeartbeatInterval, c.NodeTimeout, c.Acquirers = time.Hour, 2*time.Hour, 1
	})
	n := &fakeNode{t: t, st: st, clk: clk, e: e, rec: rec}
	job := insertJob(t, st, "serial", func(j *store.Job) { j.Concurrency = store.ConcurrencySerial })
	insertTrigger(t, st, job, "thrice", schedule.Simple{Interval: time.Second, RepeatCount: 2}, t0.Add(time.Second), nil)
	n.start()

	n.advance(time.Second)
	waitFor(t, "A to start", rec.started, 1)
	n.advance(2 * time.Second) // B and C are due and queue behind A
	waitFor(t, "B and C to queue", e.signals.queued, 2)
	close(release)
	n.completed(1) // A
	want := []store.ExecutionState{store.ExecSucceeded, store.ExecSucceeded, store.ExecSucceeded}
	if lose {
		// B is the other node's (which this test does not run); C's turn comes at once.
		n.completed(1)
		want[1] = store.ExecAcquired
	} else {
		clk.WaitForTimers(loopTimers+1, nil) // the loops, and the pause before B's claim is retried
		clk.Advance(markRetryDelay)
		n.completed(2) // B, then C
	}
	if got := states(n.executions(job)); !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
}

// commitLostStore is the real store, except that the first acquisition round that takes fires
// has its commit reported as failed: applied first (the connection dropped between the
// commit and its answer, as when the database fails over), or rolled back.
type commitLostStore struct {
	store.Store
	applied bool
	lost    atomic.Bool
}

func (s *commitLostStore) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &commitLostTx{Tx: tx, s: s}, nil
}

type commitLostTx struct {
	store.Tx
	s    *commitLostStore
	took bool
}

func (t *commitLostTx) ExecutionsInsert(ctx context.Context, es []*store.Execution) ([]*store.Execution, error) {
	t.took = t.took || len(es) > 0
	return t.Tx.ExecutionsInsert(ctx, es)
}

func (t *commitLostTx) ExecutionsAcquire(ctx context.Context, o store.Owner, ids []int64) ([]int64, error) {
	won, err := t.Tx.ExecutionsAcquire(ctx, o, ids)
	t.took = t.took || len(won) > 0
	return won, err
}

func (t *commitLostTx) Commit() error {
	if !t.took || !t.s.lost.CompareAndSwap(false, true) {
		return t.Tx.Commit()
	}
	if !t.s.applied {
		t.Tx.Rollback()
		return errors.New("connection reset (before the commit)")
	}
	if err := t.Tx.Commit(); err != nil {
		return err
	}
	return errors.New("connection reset (after the commit)")
}

// TestAcquisitionCommitUnanswered checks that a fire whose acquisition's commit is reported
// failed runs once, whether the commit was applied or not, and whether the round made its
// execution (a trigger's fire) or moved a pending one: not left acquired by a live node that
// holds nothing of it in memory (the fires a PostgreSQL failover stranded), nor run twice.
func TestAcquisitionCommitUnanswered(t *testing.T) {
	for _, applied := range []bool{true, false} {
		for _, pending := range []bool{false, true} {
			name := map[bool]string{true: "applied", false: "rolled back"}[applied] + "/" +
				map[bool]string{false: "trigger", true: "pending"}[pending]
			t.Run(name, func(t *testing.T) {
				eachDialect(t, func(t *testing.T, dialect string) {
					st := &commitLostStore{Store: openStore(t, dialect), applied: applied}
					n := newFakeNodeOn(t, st, newRecorder())
					job := insertJob(t, st, "job", nil)
					if pending {
						x := &store.Execution{JobID: job.ID, ScheduledAt: ms(t0.Add(time.Second)), Cause: store.CauseAPI, State: store.ExecPending}
						if _, err := st.ExecutionsInsert(context.Background(), []*store.Execution{x}); err != nil {
							t.Fatal(err)
						}
					} else {
						insertTrigger(t, st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
					}
					n.start()

					n.advance(time.Second)
					if !st.lost.Load() {
						t.Fatal("no acquisition commit was lost")
					}
					n.advance(time.Second)
					waitFor(t, "the fire to run", n.rec.started, 1)
					n.completed(1)
					execs := n.executions(job)
					if len(execs) != 1 || execs[0].State != store.ExecSucceeded {
						t.Fatalf("executions %v, want the one fire succeeded", states(execs))
					}
					if dups := n.rec.duplicates(); len(dups) > 0 {
						t.Fatalf("ran twice: %v", dups)
					}
				})
			})
		}
	}
}
