package engine

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// runLedger records when each run of a handler began and ended, by the test process's
// monotonic clock: a record kept outside the database the nodes share.
type runLedger struct {
	mu   sync.Mutex
	runs []ledgerRun
	done chan struct{} // a value per finished run
}

type ledgerRun struct {
	exec       int64
	node       string
	start, end time.Time
}

// handler runs for d (or until canceled) and records the run.
func (l *runLedger) handler(d time.Duration) func(context.Context, *Fire) Result {
	return func(ctx context.Context, f *Fire) Result {
		start := time.Now()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		l.mu.Lock()
		l.runs = append(l.runs, ledgerRun{exec: f.Execution.ID, node: f.Execution.Node, start: start, end: time.Now()})
		l.mu.Unlock()
		l.done <- struct{}{}
		return Result{Message: "ok"}
	}
}

// overlaps returns the pairs of runs that were under way at the same time.
func (l *runLedger) overlaps() [][2]ledgerRun {
	l.mu.Lock()
	runs := slices.Clone(l.runs)
	l.mu.Unlock()
	slices.SortFunc(runs, func(a, b ledgerRun) int { return a.start.Compare(b.start) })
	var out [][2]ledgerRun
	for i := 1; i < len(runs); i++ {
		// Runs are sorted by start, so run i overlaps an earlier one exactly when it began
		// before the latest end so far.
		for j := 0; j < i; j++ {
			if runs[i].start.Before(runs[j].end) {
				out = append(out, [2]ledgerRun{runs[j], runs[i]})
			}
		}
	}
	return out
}

// TestConcurrencyAcrossNodes runs an in-process job on three nodes of one database (two on
// SQLite, sharing its one connection) with three triggers each firing faster than a run
// lasts, and checks with a ledger kept outside the database that no two runs of a serial or
// a discard job were ever under way at once, whichever node ran them.
func TestConcurrencyAcrossNodes(t *testing.T) {
	for _, policy := range []store.ConcurrencyPolicy{store.ConcurrencySerial, store.ConcurrencyDiscard} {
		t.Run(string(policy), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) { testConcurrencyAcrossNodes(t, dialect, policy) })
		})
	}
}

func testConcurrencyAcrossNodes(t *testing.T, dialect string, policy store.ConcurrencyPolicy) {
	const (
		interval = 60 * time.Millisecond
		runFor   = 50 * time.Millisecond
		triggers = 3
		runs     = 20
	)
	ctx := context.Background()
	dsn := testdb.DSN(t, dialect)
	nodes := 3
	if dialect == "sqlite" {
		nodes = 2
	}
	var stores []store.Store
	for i := 0; i < nodes; i++ {
		if dialect == "sqlite" && i > 0 {
			stores = append(stores, stores[0])
			continue
		}
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if i == 0 {
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		stores = append(stores, st)
	}
	job := insertJob(t, stores[0], "alone", func(j *store.Job) { j.Concurrency = policy })
	start := time.Now().Add(time.Second)
	for i := 0; i < triggers; i++ {
		insertTrigger(t, stores[0], job, "t"+strconv.Itoa(i), schedule.Simple{Interval: interval, RepeatCount: schedule.RepeatForever},
			start.Add(time.Duration(i)*interval/triggers), nil)
	}
	ledger := &runLedger{done: make(chan struct{}, 1<<12)}
	rec := newRecorder()
	rec.behave = ledger.handler(runFor)
	var engines []*Engine
	for i := 0; i < nodes; i++ {
		e := newEngine(t, stores[i], rec, "node"+strconv.Itoa(i), clock.Real{}, nil)
		startEngine(t, e)
		engines = append(engines, e)
	}
	waitFor(t, "runs", ledger.done, runs)
	for _, e := range engines {
		// Stop waits for the runs, so the ledger is complete. Its error is not this test's
		// subject: on MySQL a lease release can lose a deadlock against another node's
		// LeaseAcquire (its INSERT IGNORE's shared lock, then its UPDATE).
		if err := e.Stop(ctx); err != nil {
			t.Logf("stop %s: %v", e.NodeID(), err)
		}
	}
	for _, o := range ledger.overlaps() {
		t.Errorf("execution %d on %s (%s – %s) overlaps execution %d on %s (%s – %s)",
			o[0].exec, o[0].node, o[0].start.Format("05.000"), o[0].end.Format("05.000"),
			o[1].exec, o[1].node, o[1].start.Format("05.000"), o[1].end.Format("05.000"))
	}
	byNode := map[string]int{}
	ledger.mu.Lock()
	for _, r := range ledger.runs {
		byNode[r.node]++
	}
	ledger.mu.Unlock()
	t.Logf("runs by node: %v", byNode)
}
