package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestNoDoubleAfterDatabaseCut: node b runs a fire of a job that requests recovery; the
// database is cut (every byte dropped, nothing closed) as the run ends, so its success waits
// in b's result batch. The cut lasts past the node timeout. When it heals, b is slower to
// come back than the leader a (under load its first beat after an outage can take longer
// than the node timeout: the chaos suite's 39 doubles): here b's own path to the database
// heals a while after a's. The leader must not declare b dead for a silence the outage
// caused: b beats within the grace, its result is written, and the fire runs once, by the
// ledger kept outside the database. It used to be declared dead as soon as a had seen the
// database for a node timeout, and its recovered run ran a second time.
//
// b's path stays cut for longer than the grace in the second case: the grace is bounded, and
// b is then declared dead and its run recovered as before.
//
// In the third case the leader starts its recovery as the cut begins, when its own view
// still allows it to judge: the network holds its statements through the cut and delivers
// them when it heals, when b is silent only because the outage kept its beats away. The
// database's answer must not be acted on: b is not declared dead.
//
// SQLite has no network to cut: PostgreSQL and MySQL only. Staleness is judged by the
// database's clock, so the engines run on the real clock; the test calls the leader's
// recovery itself, at the moments the rules turn on.
func TestNoDoubleAfterDatabaseCut(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			for _, c := range []cutCase{backWithinGrace, backAfterGrace, judgedThroughCut} {
				t.Run(string(c), func(t *testing.T) { testNoDoubleAfterCut(t, dialect, c) })
			}
		})
	}
}

type cutCase string

const (
	backWithinGrace  cutCase = "b back within the grace"
	backAfterGrace   cutCase = "b back after the grace"
	judgedThroughCut cutCase = "recovery held through the cut"
)

func testNoDoubleAfterCut(t *testing.T, dialect string, c cutCase) {
	late := c == backAfterGrace
	ctx := context.Background()
	p := newCutPair(t, dialect, "", func(c *Config) { c.DrainTimeout, c.LeaveTimeout = 5*time.Second, 5*time.Second })
	cut, bPath, a, b := p.cut, p.bPath, p.a, p.b
	var judged chan error
	if c == judgedThroughCut {
		waitUntil(t, "a to see the database for a node timeout", func() bool { return a.SeesDatabaseFor(a.NodeTimeout()) })
	}

	// A cut drops what is under way: its connections are closed when it heals. The third
	// case needs a's statements held and delivered at the heal, as TCP does after a
	// partition shorter than its own timeouts.
	partition, heal := cut.Cut, cut.Heal
	cutB, healB := bPath.Cut, bPath.Heal
	if c == judgedThroughCut {
		partition, heal = cut.Hold, cut.Release
		// b's connections are closed instead, their closes delivered with a's held
		// statements. Cut and held, a session b had open would keep what it locked (an
		// acquisition round holds b's node row) while a's recovery waited on it, and b's
		// path heals only after that recovery ends: the test would wait for itself (seen
		// in CI, when the cut fell inside one of b's rounds).
		cutB = func() error { bPath.Refuse(); return nil }
		healB = bPath.Accept
	}
	if err := partition(); err != nil {
		t.Fatal(err)
	}
	if err := cutB(); err != nil {
		t.Fatal(err)
	}
	close(p.release) // the success goes to b's result batch, whose write hangs
	if c == judgedThroughCut {
		if _, ok := a.JudgeSilence(a.cfg.NodeTimeout, a.cfg.HeartbeatInterval); !ok {
			t.Fatal("a may not judge as the cut begins: the test cannot tell")
		}
		judged = make(chan error, 1)
		go func() { judged <- a.RecoverDeadNodes(ctx) }()
	}
	// The outage outlasts the node timeout: every row is stale when it heals. It is the
	// fault's length, measured by the database's clock; nothing to wait for.
	time.Sleep(a.cfg.NodeTimeout + 2*a.cfg.HeartbeatInterval)
	if c == judgedThroughCut {
		select {
		case err := <-judged:
			t.Fatalf("a's recovery ended during the cut (%v): the network did not hold it", err)
		default:
		}
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}

	if c == judgedThroughCut {
		// The held statements reach the database now, b silent for longer than the node
		// timeout by its clock.
		if err := waitFor(t, "a's held recovery to end", judged, 1)[0]; err != nil {
			t.Fatalf("a's recovery held through the cut: %v (want its statements answered after the heal)", err)
		}
		select {
		case n := <-a.signals.recovered:
			t.Fatalf("a declared %s dead on an answer the database gave as the cut healed", n)
		default:
		}
	} else {
		// The moment the leader's own view allowed it to judge others: it has seen the
		// database for a node timeout since the heal. b has not beaten since.
		waitUntil(t, "a to see the database for a node timeout", func() bool { return a.SeesDatabaseFor(a.NodeTimeout()) })
		if err := a.RecoverDeadNodes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if late {
		waitUntil(t, "the grace to pass", func() bool { return a.SeesDatabaseFor(a.outageGrace()) })
		if err := a.RecoverDeadNodes(ctx); err != nil {
			t.Fatal(err)
		}
		if got := waitFor(t, "b declared dead", a.signals.recovered, 1)[0]; got != "b" {
			t.Fatalf("recovered %q, want b", got)
		}
	}
	if err := healB(); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(ctx); err != nil && !late { // writes b's result batch
		t.Fatalf("stop b: %v", err)
	}
	execs := p.endedExecutions(t)
	runs := p.ledger.entries()
	if len(runs) != 1 {
		t.Fatalf("ledger %v, want one fire", runs)
	}
	for k, nodes := range runs {
		switch {
		case !late && (len(nodes) != 1 || len(execs) != 1 || execs[0].State != store.ExecSucceeded):
			t.Fatalf("%s ran %d times (on %v), executions %v: want once, on b, succeeded", describe(k), len(nodes), nodes, states(execs))
		case late && (len(nodes) != 2 || len(execs) != 2 || execs[0].State != store.ExecLost || execs[1].State != store.ExecSucceeded):
			// b's late success must not be written over the loss the leader committed.
			t.Fatalf("%s ran on %v, executions %v: want b's run lost and recovered on a", describe(k), nodes, states(execs))
		}
	}
}

// cutPair is two nodes on one PostgreSQL or MySQL database, each through its own network
// path: a reaches it through cut; b through bPath in front of cut, so that cutting the
// first cuts both and b's path can fail or heal alone. Every run enters the ledger kept
// outside the database; b is running the one fire of job (which requests recovery), its
// handler held until release is closed or its context ends.
type cutPair struct {
	cut, bPath *testdb.Proxy
	stA, stB   store.Store
	a, b       *Engine
	rec        *recorder
	ledger     *fireLedger
	release    chan struct{}
	job        *store.Job
}

// newCutPair starts b, waits until it runs the fire, then starts a. bParam ("name=value"),
// when set, goes on b's DSN.
func newCutPair(t *testing.T, dialect, bParam string, tune func(*Config)) *cutPair {
	t.Helper()
	dsnA, cut := testdb.Proxied(t, dialect)
	bPath, err := testdb.NewProxy(cut.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bPath.Close)
	dsnB := strings.Replace(dsnA, cut.Addr(), bPath.Addr(), 1)
	if bParam != "" {
		dsnB = testdb.WithParam(dsnB, bParam)
	}
	p := &cutPair{cut: cut, bPath: bPath, stA: teststore.OpenDSN(t, dsnA), stB: teststore.OpenDSN(t, dsnB),
		rec: newRecorder(), ledger: newFireLedger(), release: make(chan struct{})}
	p.rec.behave = func(ctx context.Context, f *Fire) Result {
		if f.Execution.Cause != store.CauseRecovery {
			select {
			case <-p.release:
			case <-ctx.Done(): // stopped with its run still going (a failing test)
			}
		}
		return Result{Message: "ok"}
	}
	p.b = newEngine(t, p.stB, p.rec, "b", clock.Real{}, tune)
	p.b.cfg.Dispatcher = p.ledger.dispatcher(p.rec, "b")
	p.a = newEngine(t, p.stA, p.rec, "a", clock.Real{}, tune)
	p.a.cfg.Dispatcher = p.ledger.dispatcher(p.rec, "a")
	p.job = insertJob(t, p.stA, "job", func(j *store.Job) { j.RequestsRecovery = true })
	insertTrigger(t, p.stA, p.job, "once", schedule.Simple{}, time.Now().Add(300*time.Millisecond), nil)
	startEngine(t, p.b)
	waitFor(t, "b to start the run", p.rec.started, 1)
	startEngine(t, p.a) // after b claimed the fire: the run is b's
	return p
}

// endedExecutions waits until every execution of the job is over and returns them in order.
func (p *cutPair) endedExecutions(t *testing.T) []*store.Execution {
	t.Helper()
	ctx := context.Background()
	list := func() []*store.Execution {
		execs, err := p.stA.ExecutionList(ctx, store.ExecutionFilter{JobID: p.job.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return execs
	}
	waitUntil(t, "every run of the job to end", func() bool {
		execs := list()
		return len(execs) > 0 && !slices.ContainsFunc(execs, func(x *store.Execution) bool { return !x.State.Terminal() })
	})
	execs := list()
	slices.SortFunc(execs, func(x, y *store.Execution) int { return int(x.ID - y.ID) })
	return execs
}

// dispatchFunc is a Dispatcher made of a function.
type dispatchFunc func(ctx context.Context, f *Fire) Result

func (d dispatchFunc) Dispatch(ctx context.Context, f *Fire) Result { return d(ctx, f) }

// waitUntil waits for cond, a state of the engine or the database the test cannot be told
// of by a signal, checking it every 10 ms; the limit only catches a hung test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
