package engine

import (
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// TestFireQueueHoldsItsLimit checks the acquirer's backpressure: the queue is full at its
// limit whether the fires wait in the heap or were released to the starter, and it signals
// room only once the starter took enough of them.
func TestFireQueueHoldsItsLimit(t *testing.T) {
	q := newFireQueue(3)
	fire := func(at int64) *pendingFire { return &pendingFire{exec: &store.Execution{ID: at, ScheduledAt: at}} }
	q.push(fire(30), fire(10), fire(20), fire(10))
	if !q.full() {
		t.Fatal("3 fires held with a limit of 3, and the queue is not full")
	}
	if q.held != 3 {
		t.Fatalf("a fire pushed twice is held twice: %d held, want 3", q.held)
	}
	due := q.popDue(time.UnixMilli(20))
	if len(due) != 2 || due[0].exec.ScheduledAt != 10 || due[1].exec.ScheduledAt != 20 {
		t.Fatalf("popDue(20) = %d fires, want those at 10 and 20 in order", len(due))
	}
	if !q.full() {
		t.Fatal("released fires the starter has not taken yet no longer count")
	}
	select {
	case <-q.room:
		t.Fatal("room signaled before the starter took anything")
	default:
	}
	q.taken(2)
	if q.full() {
		t.Fatal("the queue is still full after the starter took 2 of 3")
	}
	select {
	case <-q.room:
	default:
		t.Fatal("no room signaled after the starter took fires")
	}
	q.hold(2) // fires deferred to their due time come back
	if !q.full() {
		t.Fatal("fires handed back to the starter do not count")
	}
}
