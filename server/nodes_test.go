package server

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestNodeListLiveness: the node list tells a node's health (live, or dead after missing its
// heartbeats) apart from which node answered the request, and the answering node's load —
// on every database.
func TestNodeListLiveness(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		// A leader judges silence only once it has seen the database for a node timeout: an
		// hour keeps it from declaring the silent node dead (deleting it) during the test.
		e := newEnvWith(t, dialect, func(c *Config) { c.Scheduler.Engine.NodeTimeout = time.Hour })
		ctx := context.Background()
		if _, err := e.st.NodeRegister(ctx, store.Owner{Node: "gone", Incarnation: "i1"}, "vm"); err != nil {
			t.Fatal(err)
		}
		// Its last heartbeat long ago, by the database's clock (what the server judges by).
		if _, err := e.st.DB().ExecContext(ctx, "UPDATE nodes SET last_seen = 1 WHERE id = 'gone'"); err != nil {
			t.Fatal(err)
		}
		var page api.Page[api.Node]
		e.call("GET", "/api/v1/nodes", nil, 200, &page)
		got := map[string]api.Node{}
		for _, n := range page.Items {
			got[n.ID] = n
		}
		self := e.srv.sched.Engine().NodeID()
		if n := got[self]; !n.Live || !n.Self {
			t.Errorf("the answering node %s: %+v, want live and self", self, n)
		}
		if n := got["gone"]; n.Live || n.Self || n.ID == "" || n.Load != nil {
			t.Errorf("the silent node: %+v, want listed, not live, not self, no load (a node knows only its own)", n)
		}
		// The answering node tells its load: it has heartbeaten (Start returns after its
		// first heartbeat), so the age is known and at most the heartbeat interval plus
		// this request; nothing is due, so nothing waits.
		if l := got[self].Load; l == nil || l.HeartbeatAgeMs < 0 || l.HeartbeatAgeMs > time.Minute.Milliseconds() || l.Backlog != 0 {
			t.Errorf("the answering node's load: %+v, want a heartbeat age and no backlog", l)
		}
	})
}
