package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestReplaceAcrossNodes: a replace job's fire runs on node a; its next fire, acquired by
// node b, must cancel a's run (a kill request through the database) and then run, never
// beside it and never after waiting for a's run to end by itself.
func TestReplaceAcrossNodes(t *testing.T) {
	eachDialect(t, testReplaceAcrossNodes)
}

func testReplaceAcrossNodes(t *testing.T, dialect string) {
	const runFor = 20 * time.Second // far longer than the test waits: only a kill ends it early
	ctx := context.Background()
	var stA, stB store.Store
	dsn := testdb.DSN(t, dialect)
	stA = teststore.OpenDSN(t, dsn)
	stB = stA
	if dialect != "sqlite" { // SQLite's nodes share its one connection
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stB = st
	}
	a := &pausableStore{Store: stA}
	job := insertJob(t, stA, "replace", func(j *store.Job) { j.Concurrency = store.ConcurrencyReplace })
	type ended struct {
		exec  int64
		cause error
		at    time.Time
	}
	endedCh := make(chan ended, 4)
	rec := newRecorder()
	rec.behave = func(ctx context.Context, f *Fire) Result {
		t := time.NewTimer(runFor)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		endedCh <- ended{f.Execution.ID, context.Cause(ctx), time.Now()}
		return Result{Message: "ran"}
	}
	once := schedule.Simple{RepeatCount: 0}

	nodeA := newEngine(t, a, rec, "a", clock.Real{}, nil)
	startEngine(t, nodeA)
	insertTrigger(t, stA, job, "first", once, time.Now().Add(200*time.Millisecond), nil)
	first := waitFor(t, "the first fire to start on a", rec.started, 1)[0]
	if first.Execution.Node != "a" {
		t.Fatalf("the first fire started on %q, want a", first.Execution.Node)
	}
	a.paused.Store(true) // a runs its fire and takes no other: the next fire is b's

	nodeB := newEngine(t, stB, rec, "b", clock.Real{}, nil)
	startEngine(t, nodeB)
	insertTrigger(t, stB, job, "second", once, time.Now().Add(200*time.Millisecond), nil)
	second := waitFor(t, "the second fire to start on b", rec.started, 1)[0]
	started := time.Now()
	if second.Execution.Node != "b" {
		t.Fatalf("the second fire started on %q, want b", second.Execution.Node)
	}
	// The first run ended before the second began (a's handler returned when canceled).
	var e ended
	select {
	case e = <-endedCh:
	default:
		t.Fatalf("the second fire started on b while the first still ran on a")
	}
	if e.exec != first.Execution.ID || !errors.Is(e.cause, errKilled) || !e.at.Before(started) {
		t.Fatalf("first run ended %+v; want execution %d killed before the second started", e, first.Execution.ID)
	}
	x, err := stA.ExecutionGet(ctx, first.Execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.State != store.ExecCanceled {
		t.Errorf("the replaced run is %s, want canceled", x.State)
	}
	if dups := rec.duplicates(); len(dups) > 0 {
		t.Errorf("ran twice: %v", dups)
	}
}

// pausableStore is the real store, except that while paused its node acquires nothing: no
// due trigger and no pending execution. It keeps a fire on the node the test wants.
type pausableStore struct {
	store.Store
	paused atomic.Bool
}

func (s *pausableStore) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return pausableTx{tx, &s.paused}, nil
}

type pausableTx struct {
	store.Tx
	paused *atomic.Bool
}

func (tx pausableTx) TriggersLockDue(ctx context.Context, dueBefore int64, limit int) ([]*store.Trigger, error) {
	if tx.paused.Load() {
		return nil, nil
	}
	return tx.Tx.TriggersLockDue(ctx, dueBefore, limit)
}

func (tx pausableTx) ExecutionsLockDuePending(ctx context.Context, dueBefore int64, limit int) ([]*store.Execution, error) {
	if tx.paused.Load() {
		return nil, nil
	}
	return tx.Tx.ExecutionsLockDuePending(ctx, dueBefore, limit)
}
