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

	// Several executions' output at once: each execution's lines are its own, and the lines
	// stored already and those below 1 are skipped as one by one.
	n := get(s.ExecutionLogsAppend(ctx, []store.ExecutionLines{
		{ExecutionID: 8, Lines: lines(2, 4)}, {ExecutionID: 9, Lines: lines(0, 3)}, {ExecutionID: 10},
	})).ok(t)
	equal(t, "appended together", n, int64(5))
	equal(t, "execution 8 after", fmt.Sprint(get(s.ExecutionLogList(ctx, 8, 0, 100)).ok(t)), fmt.Sprint(lines(1, 4)))
	equal(t, "execution 9", fmt.Sprint(get(s.ExecutionLogList(ctx, 9, 0, 100)).ok(t)), fmt.Sprint(lines(1, 3)))
	equal(t, "nothing", get(s.ExecutionLogsAppend(ctx, nil)).ok(t), int64(0))
}

func testNodes(t *testing.T, s store.Store) {
	ctx := context.Background()
	a1, b1 := store.Owner{Node: "node-a", Incarnation: "a1"}, store.Owner{Node: "node-b", Incarnation: "b1"}
	// A heartbeat never inserts: a life with no row was never registered, or declared dead.
	_, err := s.NodeHeartbeat(ctx, a1, "host-a")
	wantErr(t, err, store.ErrNotFound)
	a := get(s.NodeRegister(ctx, a1, "host-a")).ok(t)
	if a.StartedAt == 0 || a.LastSeen != a.StartedAt || a.Name != "host-a" || a.Owner() != a1 {
		t.Fatalf("registration: %+v", a)
	}
	now := get(s.DBNow(ctx)).ok(t)
	if d := now - a.LastSeen; d < 0 || d > 5000 {
		t.Fatalf("heartbeat %d is not stamped with the database clock %d", a.LastSeen, now)
	}
	// A registration reads the database clock once: started_at and last_seen are one instant
	// even when the statement runs across a millisecond boundary (checked on many fresh nodes,
	// since one crossing in a few dozen beats is what a clock read twice gives).
	for i := range 200 {
		o := store.Owner{Node: fmt.Sprintf("fresh-%d", i), Incarnation: "1"}
		n := get(s.NodeRegister(ctx, o, "host")).ok(t)
		if n.StartedAt != n.LastSeen {
			t.Fatalf("registration of %v: started_at %d, last_seen %d", o, n.StartedAt, n.LastSeen)
		}
		noErr(t, s.NodeDelete(ctx, o))
	}
	get(s.NodeRegister(ctx, b1, "host-b")).ok(t)
	// The database clock cannot be faked: age node-b for real, by a margin that a loaded CI
	// machine cannot eat between node-a's next beat and the query.
	time.Sleep(time.Second)
	a2 := get(s.NodeHeartbeat(ctx, a1, "host-a2")).ok(t)
	if a2.StartedAt != a.StartedAt || a2.LastSeen <= a.LastSeen || a2.Name != "host-a2" {
		t.Fatalf("second heartbeat %+v after %+v", a2, a)
	}
	equal(t, "nodes", len(get(s.NodeList(ctx)).ok(t)), 2)
	equal(t, "stale within an hour", len(get(s.NodesStale(ctx, time.Hour)).ok(t)), 0)
	stale := get(s.NodesStale(ctx, 500*time.Millisecond)).ok(t)
	if len(stale) != 1 || stale[0].Owner() != b1 {
		t.Fatalf("stale nodes = %+v, want node-b only", stale)
	}

	// The leader declares a life dead only while it is silent.
	equal(t, "a live node deleted as stale", get(s.NodeDeleteStale(ctx, a1, 500*time.Millisecond)).ok(t), false)
	equal(t, "another life deleted", get(s.NodeDeleteStale(ctx, store.Owner{Node: "node-b", Incarnation: "b0"}, 500*time.Millisecond)).ok(t), false)
	equal(t, "stale node deleted", get(s.NodeDeleteStale(ctx, b1, 500*time.Millisecond)).ok(t), true)
	// The dead life wakes up: its heartbeat finds its row gone and does not bring it back.
	_, err = s.NodeHeartbeat(ctx, b1, "host-b")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.NodeHold(ctx, b1), store.ErrNotFound)
	equal(t, "nodes after the dead one woke", len(get(s.NodeList(ctx)).ok(t)), 1)

	// node-a starts again under its id: the new life replaces the row, and the old life can
	// neither beat, hold nor leave any more.
	a2o := store.Owner{Node: "node-a", Incarnation: "a2"}
	again := get(s.NodeRegister(ctx, a2o, "host-a")).ok(t)
	if again.Owner() != a2o || again.StartedAt < a.StartedAt || again.LastSeen != again.StartedAt {
		t.Fatalf("second life: %+v after %+v", again, a)
	}
	_, err = s.NodeHeartbeat(ctx, a1, "host-a")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.NodeDelete(ctx, a1), store.ErrNotFound)
	tx := get(s.Begin(ctx)).ok(t)
	wantErr(t, tx.NodeHold(ctx, a1), store.ErrNotFound)
	noErr(t, tx.NodeHold(ctx, a2o))
	noErr(t, tx.Commit())
	equal(t, "nodes", fmt.Sprint(ids(get(s.NodeList(ctx)).ok(t), func(n *store.Node) int64 { return int64(len(n.Incarnation)) })), "[2]")
	noErr(t, s.NodeDelete(ctx, a2o))
	wantErr(t, s.NodeDelete(ctx, a2o), store.ErrNotFound)
	equal(t, "nodes after delete", len(get(s.NodeList(ctx)).ok(t)), 0)
}

// testFencing checks that every change to a node's executions is a compare-and-set on the
// life that owns them: a node restarted under the same id finds its earlier life's work and
// recovers it, and the earlier life, late, changes nothing.
func testFencing(t *testing.T, s store.Store) {
	ctx := context.Background()
	old, cur := store.Owner{Node: "n", Incarnation: "old"}, store.Owner{Node: "n", Incarnation: "new"}
	mk := func(o store.Owner, state store.ExecutionState, at int64) *store.Execution {
		return &store.Execution{JobID: 1, TriggerID: 1, ScheduledAt: at, Cause: store.CauseSchedule, Node: o.Node,
			Incarnation: o.Incarnation, State: state}
	}
	oldAcq, oldRun, oldSent, oldTaken := mk(old, store.ExecAcquired, 1), mk(old, store.ExecRunning, 2),
		mk(old, store.ExecRunning, 3), mk(old, store.ExecRunning, 4)
	curAcq, curRun := mk(cur, store.ExecAcquired, 5), mk(cur, store.ExecRunning, 6)
	get(s.ExecutionsInsert(ctx, []*store.Execution{oldAcq, oldRun, oldSent, oldTaken, curAcq, curRun})).ok(t)
	equal(t, "stored owner", store.OwnerOf(get(s.ExecutionGet(ctx, oldAcq.ID)).ok(t)), old)
	equal(t, "owners", fmt.Sprint(get(s.ExecutionsOwners(ctx, "n")).ok(t)), fmt.Sprint([]store.Owner{cur, old}))
	equal(t, "owners of another node", len(get(s.ExecutionsOwners(ctx, "m")).ok(t)), 0)

	// Only the life that runs an execution records its dispatch and its acceptance.
	equal(t, "dispatch by another life", get(recordSend(ctx, s, cur, oldSent.ID, "http://gone:1", "", 0, 1, "sent")).ok(t), false)
	for _, x := range []*store.Execution{oldSent, oldTaken} {
		equal(t, "dispatch", get(recordSend(ctx, s, old, x.ID, "http://exec:1", "", 0, 1, "sent")).ok(t), true)
	}
	equal(t, "accepted by another life", get(recordAccepted(ctx, s, cur, oldTaken.ID)).ok(t), false)
	equal(t, "accepted", get(recordAccepted(ctx, s, old, oldTaken.ID)).ok(t), true)
	equal(t, "accepted of an acquired one", get(recordAccepted(ctx, s, old, oldAcq.ID)).ok(t), false)
	equal(t, "trigger code", get(s.ExecutionGet(ctx, oldTaken.ID)).ok(t).TriggerCode, store.DispatchAccepted)

	// The new life can neither start nor end the old one's work.
	equal(t, "started by another life", len(get(s.ExecutionsMarkRunning(ctx, cur, []int64{oldAcq.ID}, 9)).ok(t)), 0)
	equal(t, "completed by another life", len(get(s.ExecutionsCompleteOwned(ctx, cur, []store.ExecutionResult{
		{ID: oldRun.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t)), 0)

	// Recovering the old life: its acquired fire goes back, its in-process run and the run no
	// executor accepted are lost; the accepted run is the executor's, and the new life's
	// work is untouched.
	equal(t, "released", get(s.ExecutionsReleaseAcquired(ctx, old)).ok(t), int64(1))
	x := get(s.ExecutionGet(ctx, oldAcq.ID)).ok(t)
	if x.State != store.ExecPending || x.Node != "" || x.Incarnation != "" {
		t.Fatalf("released execution: %+v", x)
	}
	sameIDs(t, "lost", ids(get(s.ExecutionsLoseRunning(ctx, old)).ok(t), executionID), []int64{oldRun.ID, oldSent.ID})
	equal(t, "accepted run", get(s.ExecutionGet(ctx, oldTaken.ID)).ok(t).State, store.ExecRunning)
	equal(t, "new life's acquired", get(s.ExecutionGet(ctx, curAcq.ID)).ok(t).State, store.ExecAcquired)
	equal(t, "new life's running", get(s.ExecutionGet(ctx, curRun.ID)).ok(t).State, store.ExecRunning)
	// Nothing of the old life is left to recover: the executor's run is not the node's.
	equal(t, "owners after recovery", fmt.Sprint(get(s.ExecutionsOwners(ctx, "n")).ok(t)), fmt.Sprint([]store.Owner{cur}))

	// The old life, late, changes nothing.
	equal(t, "late start", len(get(s.ExecutionsMarkRunning(ctx, old, []int64{oldAcq.ID}, 9)).ok(t)), 0)
	equal(t, "late result", len(get(s.ExecutionsCompleteOwned(ctx, old, []store.ExecutionResult{
		{ID: oldRun.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t)), 0)
	equal(t, "late dispatch", get(recordSend(ctx, s, old, oldRun.ID, "http://exec:1", "", 0, 1, "sent")).ok(t), false)
	equal(t, "lost state", get(s.ExecutionGet(ctx, oldRun.ID)).ok(t).State, store.ExecLost)

	// Each life completes its own runs; an executor's result completes whoever dispatched it.
	sameIDs(t, "own result", get(s.ExecutionsCompleteOwned(ctx, cur, []store.ExecutionResult{
		{ID: curRun.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t), []int64{curRun.ID})
	sameIDs(t, "executor's result", get(s.ExecutionsComplete(ctx, []store.ExecutionResult{
		{ID: oldTaken.ID, State: store.ExecSucceeded, FinishedAt: 9}})).ok(t), []int64{oldTaken.ID})
	equal(t, "history keeps the owner", store.OwnerOf(get(s.ExecutionGet(ctx, curRun.ID)).ok(t)), cur)
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

// testRecordDispatches checks the batched dispatch write: each record is the compare-and-set
// its one-run form makes (on state running and the record's owner), reported in order.
func testRecordDispatches(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := store.Owner{Node: "n", Incarnation: "a"}, store.Owner{Node: "m", Incarnation: "b"}
	mk := func(o store.Owner, state store.ExecutionState, at int64) *store.Execution {
		return &store.Execution{JobID: 1, TriggerID: 1, ScheduledAt: at, Cause: store.CauseSchedule, Node: o.Node,
			Incarnation: o.Incarnation, State: state}
	}
	aRun, aSent, aAcq, bRun, bSent := mk(a, store.ExecRunning, 1), mk(a, store.ExecRunning, 2), mk(a, store.ExecAcquired, 3),
		mk(b, store.ExecRunning, 4), mk(b, store.ExecRunning, 5)
	get(s.ExecutionsInsert(ctx, []*store.Execution{aRun, aSent, aAcq, bRun, bSent})).ok(t)
	equal(t, "empty batch", len(get(s.ExecutionsRecordDispatches(ctx, nil)).ok(t)), 0)

	got := get(s.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{
		{Owner: b, ID: bRun.ID, Address: "http://x:2", Instance: "i2", ShardIndex: 1, ShardTotal: 2, Message: "shard 1/2"},
		{Owner: a, ID: aRun.ID, Address: "http://x:1", Instance: "i1", ShardTotal: 1, Message: "sent to x:1"},
		{Owner: b, ID: aSent.ID, Address: "http://gone:1", Message: "not b's"},
		{Owner: a, ID: aAcq.ID, Address: "http://x:1", Message: "not running"},
		{Owner: a, ID: aSent.ID, Address: "http://x:1", Instance: "i1", ShardTotal: 1, Message: "sent"},
	})).ok(t)
	equal(t, "sends", fmt.Sprint(got), "[true true false false true]")
	x := get(s.ExecutionGet(ctx, aRun.ID)).ok(t)
	equal(t, "address", x.ExecutorAddress, "http://x:1")
	equal(t, "message", x.TriggerMsg, "sent to x:1")
	d := get(s.ExecutionDispatchedTo(ctx, bRun.ID)).ok(t)
	equal(t, "instance", d.Instance, "i2")
	equal(t, "shard", get(s.ExecutionGet(ctx, bRun.ID)).ok(t).ShardIndex, 1)
	equal(t, "not sent by another life", get(s.ExecutionGet(ctx, aSent.ID)).ok(t).TriggerMsg, "sent")

	// Acceptances, mixed with a send, of two owners, one not running and one not the owner's.
	got = get(s.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{
		{Owner: a, ID: aRun.ID, Accepted: true},
		{Owner: b, ID: bSent.ID, Address: "http://x:2", Message: "sent"},
		{Owner: b, ID: bRun.ID, Accepted: true},
		{Owner: a, ID: aAcq.ID, Accepted: true},
		{Owner: a, ID: bSent.ID, Accepted: true},
	})).ok(t)
	equal(t, "acceptances", fmt.Sprint(got), "[true true true false false]")
	equal(t, "accepted a", get(s.ExecutionGet(ctx, aRun.ID)).ok(t).TriggerCode, store.DispatchAccepted)
	equal(t, "accepted b", get(s.ExecutionGet(ctx, bRun.ID)).ok(t).TriggerCode, store.DispatchAccepted)
	if c := get(s.ExecutionGet(ctx, bSent.ID)).ok(t).TriggerCode; c == store.DispatchAccepted {
		t.Fatalf("accepted by another life: trigger code %d", c)
	}
	// Two sends of one run in a batch (the executor restarted: sent again to its new
	// instance) apply in order.
	got = get(s.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{
		{Owner: a, ID: aSent.ID, Address: "http://x:1", Instance: "i1", Message: "first"},
		{Owner: a, ID: aSent.ID, Address: "http://x:1", Instance: "i9", Message: "again"},
	})).ok(t)
	equal(t, "sent twice", fmt.Sprint(got), "[true true]")
	equal(t, "sent again", get(s.ExecutionDispatchedTo(ctx, aSent.ID)).ok(t).Instance, "i9")
	// An accepted run is the executor's: the node's recovery leaves it running.
	sameIDs(t, "lost", ids(get(s.ExecutionsLoseRunning(ctx, a)).ok(t), executionID), []int64{aSent.ID})
}
