package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// TestFrozenSessionDoesNotHoldRecovery: node b is cut off from the database (every byte
// dropped, nothing closed: a failed network path, or a node frozen by SIGSTOP or a paused VM)
// while one of its sessions is inside a transaction holding b's life row, as an acquisition
// round does. The leader's recovery of b deletes that row, so it waits for that session to
// end, and without a timeout on the server's side it ends only when TCP gives up on it
// (hours). The store's sessions carry an idle-in-transaction timeout (shortened here through
// b's DSN): the server ends the frozen session, and the leader recovers b while b is still
// cut off. b's run, which requests recovery, runs again on a; by the ledger kept outside the
// database it ran once on each, and b's late result does not overwrite the loss.
//
// SQLite has no network to cut: PostgreSQL and MariaDB only.
func TestFrozenSessionDoesNotHoldRecovery(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			testFrozenSession(t, dialect)
		})
	}
}

func testFrozenSession(t *testing.T, dialect string) {
	ctx := context.Background()
	idleTimeout := map[string]string{"postgres": "idle_in_transaction_session_timeout=2000", "mysql": "idle_transaction_timeout=2"}[dialect]
	p := newCutPair(t, dialect, idleTimeout, func(c *Config) {
		c.HeartbeatInterval, c.NodeTimeout = 500*time.Millisecond, 2*time.Second
		c.DrainTimeout, c.LeaveTimeout = 5*time.Second, 5*time.Second
	})
	a, b, bPath, stA, stB := p.a, p.b, p.bPath, p.stA, p.stB
	b.lifeMu.Lock()
	bLife := b.life.owner
	b.lifeMu.Unlock()

	// One of b's sessions holds b's life row, as its acquisition rounds do, when the path fails.
	locked := make(chan struct{})
	unfreeze := make(chan struct{})
	frozen := make(chan error, 1)
	go func() {
		frozen <- store.InTx(ctx, stB, func(q store.Querier) error {
			if err := q.NodeHold(ctx, bLife); err != nil {
				return err
			}
			close(locked)
			<-unfreeze
			return q.NodeHold(ctx, bLife)
		})
	}()
	waitFor(t, "b's session to hold b's life row", locked, 1)
	if err := bPath.Cut(); err != nil {
		t.Fatal(err)
	}
	// A failing test heals before the engines stop: stopping a waits for its recovery.
	heal := sync.OnceValue(bPath.Heal)
	t.Cleanup(func() { heal() })

	// b falls silent; a, which sees the database throughout, may judge it once its row is
	// older than the node timeout by the database's clock and a has seen the database for
	// the grace (b's last beat may be older than a's view).
	waitUntil(t, "a to see b silent for a node timeout", func() bool {
		stale, err := stA.NodesStale(ctx, a.NodeTimeout())
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(stale, func(n *store.Node) bool { return n.ID == "b" }) && a.SeesDatabaseFor(a.outageGrace())
	})
	recovering := make(chan error, 1)
	go func() { recovering <- a.RecoverDeadNodes(ctx) }()
	if got := waitFor(t, "b declared dead while its session is frozen", a.signals.recovered, 1)[0]; got != "b" {
		t.Fatalf("recovered %q, want b", got)
	}
	if err := waitFor(t, "a's recovery to end", recovering, 1)[0]; err != nil {
		t.Fatalf("a's recovery of b: %v", err)
	}

	// b comes back: its frozen transaction cannot go on, and its run's late success must not
	// be written over the loss a committed.
	close(unfreeze)
	close(p.release)
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, "b's frozen transaction to end", frozen, 1)[0]; err == nil {
		t.Fatal("b's transaction held through the cut committed after a declared b dead")
	}
	_ = b.Stop(ctx) // b was declared dead: its stop may report what it could not write
	execs := p.endedExecutions(t)
	runs := p.ledger.entries()
	if len(runs) != 1 {
		t.Fatalf("ledger %v, want one fire", runs)
	}
	for k, nodes := range runs {
		if !slices.Equal(nodes, []string{"b", "a"}) || len(execs) != 2 || execs[0].State != store.ExecLost || execs[1].State != store.ExecSucceeded {
			t.Fatalf("%s ran on %v, executions %v: want b's run lost and recovered once on a", describe(k), nodes, states(execs))
		}
	}
}
