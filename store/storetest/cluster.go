package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

func testLogs(t *testing.T, s store.Store) {
	ctx := context.Background()
	lines := func(from, to int64) []store.LogLine {
		var out []store.LogLine
		for i := from; i <= to; i++ {
			out = append(out, store.LogLine{Line: i, At: 1000 + i, Message: fmt.Sprintf("line %d", i)})
		}
		return out
	}
	equal(t, "appended", get(s.ExecutionLogAppend(ctx, 7, lines(1, 5))).ok(t), int64(5))
	// A chunk sent twice is stored once; line numbers below 1 are refused.
	equal(t, "appended again", get(s.ExecutionLogAppend(ctx, 7, lines(4, 8))).ok(t), int64(3))
	equal(t, "line zero", get(s.ExecutionLogAppend(ctx, 7, lines(0, 0))).ok(t), int64(0))
	get(s.ExecutionLogAppend(ctx, 8, lines(1, 2))).ok(t)

	var got []store.LogLine
	after := int64(0)
	for {
		page := get(s.ExecutionLogList(ctx, 7, after, 3)).ok(t)
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Line
	}
	equal(t, "log pages", fmt.Sprint(got), fmt.Sprint(lines(1, 8)))
	equal(t, "other execution", len(get(s.ExecutionLogList(ctx, 8, 0, 100)).ok(t)), 2)
}

func testNodes(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := get(s.NodeHeartbeat(ctx, "node-a", "host-a")).ok(t)
	if a.StartedAt == 0 || a.LastSeen != a.StartedAt || a.Name != "host-a" {
		t.Fatalf("first heartbeat: %+v", a)
	}
	now := get(s.DBNow(ctx)).ok(t)
	if d := now - a.LastSeen; d < 0 || d > 5000 {
		t.Fatalf("heartbeat %d is not stamped with the database clock %d", a.LastSeen, now)
	}
	// A first beat reads the database clock once: started_at and last_seen are one instant even
	// when the statement runs across a millisecond boundary (checked on many fresh nodes, since
	// one crossing in a few dozen beats is what a clock read twice gives).
	for i := range 200 {
		id := fmt.Sprintf("fresh-%d", i)
		n := get(s.NodeHeartbeat(ctx, id, "host")).ok(t)
		if n.StartedAt != n.LastSeen {
			t.Fatalf("first heartbeat of %s: started_at %d, last_seen %d", id, n.StartedAt, n.LastSeen)
		}
		noErr(t, s.NodeDelete(ctx, id))
	}
	get(s.NodeHeartbeat(ctx, "node-b", "host-b")).ok(t)
	// The database clock cannot be faked: age node-b for real, by a margin that a loaded CI
	// machine cannot eat between node-a's next beat and the query.
	time.Sleep(time.Second)
	a2 := get(s.NodeHeartbeat(ctx, "node-a", "host-a2")).ok(t)
	if a2.StartedAt != a.StartedAt || a2.LastSeen <= a.LastSeen || a2.Name != "host-a2" {
		t.Fatalf("second heartbeat %+v after %+v", a2, a)
	}
	equal(t, "nodes", len(get(s.NodeList(ctx)).ok(t)), 2)
	equal(t, "stale within an hour", len(get(s.NodesStale(ctx, time.Hour)).ok(t)), 0)
	stale := get(s.NodesStale(ctx, 500*time.Millisecond)).ok(t)
	if len(stale) != 1 || stale[0].ID != "node-b" {
		t.Fatalf("stale nodes = %+v, want node-b only", stale)
	}
	noErr(t, s.NodeDelete(ctx, "node-b"))
	wantErr(t, s.NodeDelete(ctx, "node-b"), store.ErrNotFound)
	equal(t, "nodes after delete", len(get(s.NodeList(ctx)).ok(t)), 1)
}

func testLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Long enough that a loaded machine cannot let it lapse between the steps that rely on it.
	const ttl = 1500 * time.Millisecond
	l, held := mustLease(t, s, "leader", "a", ttl)
	if !held || l.Holder != "a" || l.Token != 1 {
		t.Fatalf("first acquire: held %v lease %+v", held, l)
	}
	now := get(s.DBNow(ctx)).ok(t)
	if d := l.ExpiresAt - now; d <= 0 || d > ttl.Milliseconds() {
		t.Fatalf("expiry %d is not database now %d + ttl", l.ExpiresAt, now)
	}
	// Held by another holder: not stolen.
	l2, held := mustLease(t, s, "leader", "b", ttl)
	if held || l2.Holder != "a" || l2.ExpiresAt != l.ExpiresAt {
		t.Fatalf("b stole the lease: held %v lease %+v", held, l2)
	}
	// Renewed by its holder: same token, later expiry.
	time.Sleep(10 * time.Millisecond)
	l3, held := mustLease(t, s, "leader", "a", ttl)
	if !held || l3.Token != 1 || l3.ExpiresAt <= l.ExpiresAt {
		t.Fatalf("renewal: held %v lease %+v after %+v", held, l3, l)
	}
	// Expired by the database clock: taken over, with a new token.
	for get(s.DBNow(ctx)).ok(t) < l3.ExpiresAt {
		time.Sleep(20 * time.Millisecond)
	}
	l4, held := mustLease(t, s, "leader", "b", ttl)
	if !held || l4.Holder != "b" || l4.Token != 2 {
		t.Fatalf("takeover after expiry: held %v lease %+v", held, l4)
	}
	equal(t, "release by a non-holder", get(s.LeaseRelease(ctx, "leader", "a")).ok(t), false)
	equal(t, "release by the holder", get(s.LeaseRelease(ctx, "leader", "b")).ok(t), true)
	equal(t, "second release", get(s.LeaseRelease(ctx, "leader", "b")).ok(t), false)
	l5, held := mustLease(t, s, "leader", "a", time.Minute)
	if !held || l5.Token != 3 {
		t.Fatalf("acquire after release: held %v lease %+v", held, l5)
	}
	other, held := mustLease(t, s, "registry-sweep", "b", time.Minute)
	if !held || other.Token != 1 {
		t.Fatalf("second lease name: held %v lease %+v", held, other)
	}
	equal(t, "LeaseGet holder", get(s.LeaseGet(ctx, "leader")).ok(t).Holder, "a")
	_, err := s.LeaseGet(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
}

func mustLease(t *testing.T, s store.Store, name, holder string, ttl time.Duration) (*store.Lease, bool) {
	t.Helper()
	l, held, err := s.LeaseAcquire(context.Background(), name, holder, ttl)
	noErr(t, err)
	return l, held
}
