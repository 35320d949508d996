package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// firePathCost is what the fire path (acquisition, claim, completion) sent to the store.
type firePathCost struct {
	statements, transactions int64
	rounds                   int // acquisition rounds
	byOp                     map[string]sqlstore.OpCount
}

// measureFirePath stores n one-shot triggers all due at one instant, lets one node fire them
// with a handler that returns at once, and counts the statements and transactions the fire
// path sent for them: the acquisition rounds, the claims and the result writes (not the
// heartbeats, lease and other per-second work of the node).
func measureFirePath(t *testing.T, dialect string, n int, output bool) firePathCost {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, testdb.DSN(t, dialect), sqlstore.WithOperationCounts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	job := insertJob(t, st, "writes", nil)
	due := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	for i := range n {
		insertTrigger(t, st, job, fmt.Sprintf("t%d", i), schedule.Simple{Interval: time.Second}, due, nil)
	}
	r := newRecorder()
	if output {
		r.behave = func(context.Context, *Fire) Result { return Result{Logs: []string{"one", "two"}} }
	}
	// One acquisition round at the start takes every fire (they are due within the
	// look-ahead); no poll comes before the test ends.
	e := newEngine(t, st, r, "writes", clock.Real{}, func(c *Config) { c.PollInterval, c.Acquirers = time.Hour, 1 })
	before := st.Stats().ByOperation
	startEngine(t, e)
	waitFor(t, "results written", e.signals.completed, n)
	var c firePathCost
	c.byOp = map[string]sqlstore.OpCount{}
	c.rounds = len(drain(e.signals.acquired))
	for op, v := range st.Stats().ByOperation {
		if !strings.Contains(op, "acquireRound") && !strings.Contains(op, "claimFires") && !strings.Contains(op, "writeCompletions") {
			continue
		}
		v.Statements -= before[op].Statements
		v.Transactions -= before[op].Transactions
		c.byOp[op] = v
		c.statements += v.Statements
		c.transactions += v.Transactions
	}
	return c
}

// drain returns what ch holds now.
func drain[T any](ch <-chan T) []T {
	var out []T
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// TestWritesPerFire pins the statements and transactions a fire costs the store (upper bounds,
// docs/performance.md "Writes per fire"). A lone fire costs one acquisition transaction (the
// node's row held, due triggers and pending runs locked, the run inserted and probed for an
// ended twin, the trigger advanced), one claim (acquired → running) and one result write (the
// run moved to the history); 200 fires due at one instant share those statements, bar a
// result write or two more when their handlers end a few milliseconds apart, and their output
// adds one statement to each result write.
func TestWritesPerFire(t *testing.T) {
	// The statements of one result write: PostgreSQL moves the run in one statement, SQLite
	// in two (a DELETE … RETURNING, the history insert), MySQL and MariaDB in three (a locking
	// read, the insert, the delete).
	completion := map[string]int64{"postgres": 1, "sqlite": 2, "mysql": 3}
	// The claim is one statement; MySQL has no UPDATE … RETURNING and reads the rows it
	// updates first, in a transaction of its own.
	claim := map[string]int64{"postgres": 1, "sqlite": 1, "mysql": 2}
	eachDialect(t, func(t *testing.T, dialect string) {
		const acquisition = 6 // NodeHold, TriggersLockDue, ExecutionsLockDuePending, insert, twin probe, advance
		lone := acquisition + claim[dialect] + completion[dialect]
		for _, tc := range []struct {
			fires                    int
			output                   bool // each handler returns two lines of output
			statements, transactions int64
		}{
			{1, false, lone, 3},
			{200, false, lone + 2*completion[dialect], 5},
			// The output of a result write is one statement, whatever its runs.
			{200, true, lone + 1 + 2*(completion[dialect]+1), 5},
		} {
			c := measureFirePath(t, dialect, tc.fires, tc.output)
			t.Logf("%s, %d fires (output %v): %d statements, %d transactions, %d acquisition rounds", dialect, tc.fires, tc.output, c.statements, c.transactions, c.rounds)
			for op, v := range c.byOp {
				t.Logf("  %3d st %3d tx  %s", v.Statements, v.Transactions, op)
			}
			if c.rounds != 1 {
				t.Fatalf("%d fires: %d acquisition rounds, want 1 (the counts below would not be comparable)", tc.fires, c.rounds)
			}
			if c.statements > tc.statements || c.transactions > tc.transactions {
				t.Errorf("%d fires cost %d statements and %d transactions; at most %d and %d", tc.fires, c.statements, c.transactions, tc.statements, tc.transactions)
			}
		}
	})
}
