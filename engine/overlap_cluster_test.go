package engine

import (
	"context"
	"strings"
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

// TestBufferOneAcrossNodes: a buffer_one job's first fire runs on node a; its second and
// third fires come to node b while it runs. Only one fire may wait, the newest: the second is
// recorded skipped as soon as the third is due, and the third runs once a's run has ended.
func TestBufferOneAcrossNodes(t *testing.T) {
	eachDialect(t, testBufferOneAcrossNodes)
}

func testBufferOneAcrossNodes(t *testing.T, dialect string) {
	ctx := context.Background()
	dsn := testdb.DSN(t, dialect)
	stA := teststore.OpenDSN(t, dsn)
	stB := stA
	if dialect != "sqlite" { // SQLite's nodes share its one connection
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stB = st
	}
	a := &pausableStore{Store: stA}
	job := insertJob(t, stA, "buffer-one", func(j *store.Job) { j.Concurrency = store.ConcurrencyBufferOne })
	release := make(chan struct{})
	var firstEnded, lastStarted atomic.Int64 // by the test process's clock, in ns
	rec := newRecorder()
	var first *store.Trigger
	rec.behave = func(ctx context.Context, f *Fire) Result {
		if f.Execution.TriggerID == first.ID {
			<-release
			firstEnded.Store(time.Now().UnixNano())
		} else {
			lastStarted.Store(time.Now().UnixNano())
		}
		return Result{Message: "ran"}
	}
	once := schedule.Simple{RepeatCount: 0}

	nodeA := newEngine(t, a, rec, "a", clock.Real{}, nil)
	startEngine(t, nodeA)
	first = insertTrigger(t, stA, job, "first", once, time.Now().Add(200*time.Millisecond), nil)
	if f := waitFor(t, "the first fire to start on a", rec.started, 1)[0]; f.Execution.Node != "a" {
		t.Fatalf("the first fire started on %q, want a", f.Execution.Node)
	}
	a.paused.Store(true) // a runs its fire and takes no other: the next ones are b's

	nodeB := newEngine(t, stB, rec, "b", clock.Real{}, nil)
	startEngine(t, nodeB)
	insertTrigger(t, stB, job, "second", once, time.Now().Add(200*time.Millisecond), nil)
	second := waitFor(t, "the second fire to wait on b", nodeB.signals.busy, 1)[0]
	third := insertTrigger(t, stB, job, "third", once, time.Now().Add(300*time.Millisecond), nil)
	if id := waitFor(t, "the second fire's result", nodeB.signals.completed, 1)[0]; id != second {
		t.Fatalf("execution %d completed on b, want the second fire %d (skipped)", id, second)
	}
	x, err := stB.ExecutionGet(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if x.State != store.ExecSkipped || !strings.Contains(x.HandleMsg, "newer fire") {
		t.Fatalf("the second fire is %s %q, want skipped for a newer fire", x.State, x.HandleMsg)
	}
	select {
	case f := <-rec.started:
		t.Fatalf("execution %d started while the first still ran", f.Execution.ID)
	default:
	}
	close(release)
	f := waitFor(t, "the third fire to start", rec.started, 1)[0]
	if f.Execution.TriggerID != third.ID || f.Execution.Node != "b" {
		t.Fatalf("started trigger %d's fire on %s, want the third's on b", f.Execution.TriggerID, f.Execution.Node)
	}
	if id := waitFor(t, "the third fire's result", nodeB.signals.completed, 1)[0]; id != f.Execution.ID {
		t.Fatalf("execution %d completed on b, want the third fire %d", id, f.Execution.ID)
	}
	if ended, began := firstEnded.Load(), lastStarted.Load(); ended == 0 || began < ended {
		t.Fatalf("the third fire started at %d, before the first ended (%d)", began, ended)
	}
}
