package engine

import (
	"sync"
	"time"
)

// Leadership is the node's role in the leader election, as a state machine: follower until
// the cluster loop wins the leader lease, leader until it loses it (or cannot tell) or the node
// stops. The parts that run the leader's duties listen for its transitions instead of
// polling.
type Leadership struct {
	mu     sync.Mutex
	leader bool
	since  time.Time
	subs   map[*Subscription]struct{}
}

// Transition is a change of the node's role.
type Transition struct {
	Leader bool      // the role the node has now
	At     time.Time // when the node took it, on the engine's clock
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
	return &Leadership{subs: map[*Subscription]struct{}{}}
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
	s.ch <- Transition{Leader: l.leader, At: l.since}
	l.subs[s] = struct{}{}
	return s
}

// set moves the node to the role and tells the listeners when it changed. It never blocks:
// a transition not yet read is replaced by the new one.
func (l *Leadership) set(leader bool, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader == leader {
		return false
	}
	l.leader, l.since = leader, at
	t := Transition{Leader: leader, At: at}
	for s := range l.subs {
		select {
		case <-s.ch:
		default:
		}
		s.ch <- t
	}
	return true
}
