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

// peak returns the most runs under way at once and when.
func (l *runLedger) peak() (int, time.Time) {
	type edge struct {
		at    time.Time
		delta int
	}
	l.mu.Lock()
	var edges []edge
	for _, r := range l.runs {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	l.mu.Unlock()
	// An end before a start at the same instant: a run that begins as another ends is not
	// beside it.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most, at := 0, 0, time.Time{}
	for _, e := range edges {
		if n += e.delta; n > most {
			most, at = n, e.at
		}
	}
	return most, at
}

// TestConcurrencyAcrossNodes runs an in-process job on three nodes of one database (two on
// SQLite, sharing its one connection) with three triggers each firing faster than a run
// lasts, and checks with a ledger kept outside the database that no two runs of a
// buffer_all, skip, buffer_one or cancel job were ever under way at once, whichever node ran
// them.
func TestConcurrencyAcrossNodes(t *testing.T) {
	for _, policy := range []store.ConcurrencyPolicy{store.ConcurrencyBufferAll, store.ConcurrencySkip,
		store.ConcurrencyBufferOne, store.ConcurrencyCancel} {
		t.Run(string(policy), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) { testConcurrencyAcrossNodes(t, dialect, policy, 0) })
		})
	}
}

// TestAtMostAcrossNodes is TestConcurrencyAcrossNodes for at_most 2: the fires come faster
// than two runs can take them, and the ledger must never hold three runs under way at once,
// whichever nodes ran them, yet hold two at some point.
func TestAtMostAcrossNodes(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) { testConcurrencyAcrossNodes(t, dialect, store.ConcurrencyAtMost, 2) })
}

func testConcurrencyAcrossNodes(t *testing.T, dialect string, policy store.ConcurrencyPolicy, limit int) {
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
	job := insertJob(t, stores[0], "alone", func(j *store.Job) { j.Concurrency, j.MaxConcurrent = policy, limit })
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
	if limit > 1 {
		if peak, at := ledger.peak(); peak != limit {
			t.Errorf("at most %d runs: the ledger held %d at once at %s", limit, peak, at.Format("05.000"))
		}
	}
	for _, o := range ledger.overlaps() {
		if limit > 1 {
			break
		}
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
