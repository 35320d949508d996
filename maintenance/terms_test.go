package maintenance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// gated is a Service whose Start reports itself and then waits for the test's answer.
type gated struct {
	starting chan struct{}
	answer   chan error
	stopped  chan struct{}
	running  bool
}

func newGated() *gated {
	return &gated{starting: make(chan struct{}, 8), answer: make(chan error, 8), stopped: make(chan struct{}, 8)}
}

func (g *gated) Start(context.Context) error {
	g.starting <- struct{}{}
	err := <-g.answer
	g.running = err == nil
	return err
}

func (g *gated) Stop() {
	if g.running {
		g.running = false
		g.stopped <- struct{}{}
	}
}

// termsNode is a node on a fake clock whose heartbeats (the only timer that moves) the test
// steps one at a time, with the test's own subscription to its leadership.
type termsNode struct {
	t   *testing.T
	st  *sqlstore.Store
	clk *clock.Fake
	e   *engine.Engine
	sub *engine.Subscription
}

const termsHeartbeat = time.Minute

func startTermsNode(t *testing.T, services ...Service) (*termsNode, *Manager) {
	st := teststore.Open(t, "sqlite")
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := engine.New(engine.Config{Store: st, Dispatcher: noDispatch{}, NodeID: "n1", Logger: testLogger(t), Clock: clk,
		HeartbeatInterval: termsHeartbeat, NodeTimeout: 24 * time.Hour, PollInterval: 24 * time.Hour, Acquirers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := &termsNode{t: t, st: st, clk: clk, e: e, sub: e.Leadership().Listen()}
	t.Cleanup(n.sub.Stop)
	if tr := waitFor(t, "the first role", n.sub.C()); tr.Leader {
		t.Fatal("leads before it started")
	}
	m := NewManager(e.Leadership(), testLogger(t), services...)
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return n, m
}

// next waits for the node's next role change.
func (n *termsNode) next(leader bool) engine.Transition {
	n.t.Helper()
	tr := waitFor(n.t, "a change of role", n.sub.C())
	if tr.Leader != leader {
		n.t.Fatalf("transition %+v, want leader %v", tr, leader)
	}
	return tr
}

// heartbeat moves the clock to the node's next heartbeat, once every loop sleeps on it.
func (n *termsNode) heartbeat() {
	n.clk.WaitForTimers(4, nil) // acquirer, firer, kill poll, heartbeat
	n.clk.Advance(termsHeartbeat)
}

// holdLease gives the leader lease to holder, as if another node had taken it.
func (n *termsNode) holdLease(holder string) {
	n.t.Helper()
	if _, err := n.st.DB().Exec("UPDATE leases SET holder = ? WHERE name = 'leader'", holder); err != nil {
		n.t.Fatal(err)
	}
}

// TestManagerRestartsOnNewTerm: the node loses the lease and wins it again while the Manager
// is still starting the first term's duties, so the Manager reads only the latest role —
// leader — and must see by its term that this is a new term: the duties stop and start
// again. Each term has its number.
func TestManagerRestartsOnNewTerm(t *testing.T) {
	g := newGated()
	n, _ := startTermsNode(t, g)
	if tr := n.next(true); tr.Term != 1 {
		t.Fatalf("first term %d, want 1", tr.Term)
	}
	waitFor(t, "the duty to start for term 1", g.starting)

	n.holdLease("other")
	n.heartbeat()
	n.next(false)
	n.holdLease("n1")
	n.heartbeat()
	if tr := n.next(true); tr.Term != 2 {
		t.Fatalf("term %d after the lease came back, want 2", tr.Term)
	}

	g.answer <- nil // term 1's start ends; the Manager now reads term 2
	waitFor(t, "the duty of term 1 to stop", g.stopped)
	waitFor(t, "the duty to start for term 2", g.starting)
	g.answer <- nil
}

// TestManagerResignsWhenADutyCannotStart: a duty whose Start fails ends the term: the other
// duties stop, the node steps down and gives up the lease at once, and contends again a
// heartbeat later, when the next term starts every duty again.
func TestManagerResignsWhenADutyCannotStart(t *testing.T) {
	ok, bad := newGated(), newGated()
	n, _ := startTermsNode(t, ok, bad)
	n.next(true)
	waitFor(t, "the first duty to start", ok.starting)
	ok.answer <- nil
	waitFor(t, "the second duty to start", bad.starting)
	bad.answer <- errors.New("cannot start")
	waitFor(t, "the started duty to stop", ok.stopped)
	if tr := n.next(false); tr.Term != 1 {
		t.Fatalf("resigned %+v, want term 1 over", tr)
	}
	n.clk.WaitForTimers(4, nil) // the resignation is carried out; the node sleeps a heartbeat
	var expires int64
	if err := n.st.DB().QueryRow("SELECT expires_at FROM leases WHERE name = 'leader'").Scan(&expires); err != nil || expires != 0 {
		t.Errorf("lease expires at %d (%v) after resigning, want released (0)", expires, err)
	}

	n.heartbeat()
	if tr := n.next(true); tr.Term != 2 {
		t.Fatalf("term %d after resigning, want 2", tr.Term)
	}
	waitFor(t, "the first duty to start again", ok.starting)
	ok.answer <- nil
	waitFor(t, "the second duty to start again", bad.starting)
	bad.answer <- nil
}
