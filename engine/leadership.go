package engine

import (
	"sync"
	"time"
)

// Leadership is the node's role in the leader election, as a state machine: follower until
// the cluster loop wins the leader lease, leader until it loses it (or cannot tell), resigns
// or the node stops. Each time the node becomes leader begins a new term, numbered from 1.
// The parts that run the leader's duties listen for its transitions instead of polling.
type Leadership struct {
	mu     sync.Mutex
	leader bool
	since  time.Time
	term   uint64
	subs   map[*Subscription]struct{}
	// resign carries the term whose end a duty asked for (see Resign) to the cluster loop.
	resign chan uint64
}

// Transition is a change of the node's role.
type Transition struct {
	Leader bool      // the role the node has now
	At     time.Time // when the node took it, on the engine's clock
	// Term is the leadership term begun (Leader) or the last one ended. A listener that sees
	// a term it did not see start lost the lease and won it again meanwhile: whatever it ran
	// for the older term must start again, since another node may have led in between.
	Term uint64
}

// Subscription delivers a node's role changes, from Listen until Stop.
type Subscription struct {
	l  *Leadership
	ch chan Transition
}

// C delivers the transitions. A listener that falls behind sees only the latest, which is
// the one that matters: a role it missed and left again needs no action.
func (s *Subscription) C() <-chan Transition { return s.ch }

// Stop ends the subscription. It is idempotent.
func (s *Subscription) Stop() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	delete(s.l.subs, s)
}

func newLeadership() *Leadership {
	return &Leadership{subs: map[*Subscription]struct{}{}, resign: make(chan uint64, 1)}
}

// IsLeader reports whether the node holds the leader lease.
func (l *Leadership) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

// Listen subscribes to the node's role. The subscription first delivers the current role,
// so a listener that starts while the node leads learns it at once.
func (l *Leadership) Listen() *Subscription {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &Subscription{l: l, ch: make(chan Transition, 1)}
	s.ch <- Transition{Leader: l.leader, At: l.since, Term: l.term}
	l.subs[s] = struct{}{}
	return s
}

// Resign asks the node to end the leadership term: it steps down and releases the leader
// lease at once, and contends again a heartbeat later (so another node can take over). A
// duty that cannot start asks it, as River's queue maintainer does: a leader that cannot run
// its duties is no leader. A request for a term already over is ignored, so a late one cannot
// end a newer term.
func (l *Leadership) Resign(term uint64) {
	for {
		select {
		case l.resign <- term:
			return
		default:
		}
		select {
		case <-l.resign: // replace an older request
		default:
		}
	}
}

// stepDown ends the term if it is the current one, and reports whether it did.
func (l *Leadership) stepDown(term uint64, at time.Time) bool {
	l.mu.Lock()
	current := l.leader && l.term == term
	l.mu.Unlock()
	return current && l.set(false, at)
}

// set moves the node to the role and tells the listeners when it changed; becoming leader
// begins a new term. It never blocks: a transition not yet read is replaced by the new one.
func (l *Leadership) set(leader bool, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader == leader {
		return false
	}
	if leader {
		l.term++
	}
	l.leader, l.since = leader, at
	t := Transition{Leader: leader, At: at, Term: l.term}
	for s := range l.subs {
		select {
		case <-s.ch:
		default:
		}
		s.ch <- t
	}
	return true
}
