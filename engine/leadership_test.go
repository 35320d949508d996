package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
)

// TestLeadershipListen: a listener learns the node's role at once, then each transition:
// leader when the node wins the lease, follower when it stops; a stopped subscription hears
// nothing more, and a slow listener sees the latest role rather than blocking the node.
func TestLeadershipListen(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		clk := clock.NewFake(t0)
		e := newEngine(t, st, newRecorder(), "node", clk, func(c *Config) {
			c.HeartbeatInterval, c.NodeTimeout = time.Hour, 2*time.Hour
		})
		sub := e.Leadership().Listen()
		defer sub.Stop()
		slow := e.Leadership().Listen() // never read until the end
		defer slow.Stop()
		if tr := waitFor(t, "the current role", sub.C(), 1)[0]; tr.Leader {
			t.Fatal("a stopped node listed as leader")
		}

		startEngine(t, e) // the first heartbeat takes the lease
		if tr := waitFor(t, "leadership", sub.C(), 1)[0]; !tr.Leader || !tr.At.Equal(t0) || !e.IsLeader() {
			t.Fatalf("transition %+v (IsLeader %v), want leader at %v", tr, e.IsLeader(), t0)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if tr := waitFor(t, "the step down", sub.C(), 1)[0]; tr.Leader || e.IsLeader() {
			t.Fatalf("transition %+v after Stop, want follower", tr)
		}
		if tr := waitFor(t, "the slow listener's latest", slow.C(), 1)[0]; tr.Leader {
			t.Errorf("the slow listener's transition %+v, want the latest (follower)", tr)
		}

		sub.Stop()
		again := e.Leadership().Listen()
		defer again.Stop()
		waitFor(t, "the current role", again.C(), 1)
		startEngine(t, e)
		if tr := waitFor(t, "leadership after a restart", again.C(), 1)[0]; !tr.Leader {
			t.Fatalf("transition %+v after a restart, want leader", tr)
		}
		select {
		case tr := <-sub.C():
			t.Errorf("a stopped subscription heard %+v", tr)
		default:
		}
	})
}
