package engine

import (
	"container/heap"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// pendingFire is an acquired execution waiting for its due millisecond.
type pendingFire struct {
	exec     *store.Execution
	priority int
	// unsure marks a fire whose claim failed: the claim may have been applied all the same.
	unsure bool
	// missed, when set, says why the fire is recorded skipped instead of run: its trigger's
	// misfire policy does not fire it (see misfireReturned).
	missed string
	// admitted marks a fire the concurrency tracker already counts as active: one that waited
	// while its job ran on another node.
	admitted bool
	// notBefore, when set, is the millisecond the fire may start, later than its scheduled
	// time: the app's fire-rate quota delays it (see quota.go).
	notBefore int64
	// acquiredAt is when this life acquired it: where its trace begins.
	acquiredAt time.Time
}

// due is the millisecond the fire starts: its scheduled time, or later under a quota.
func (f *pendingFire) due() int64 { return max(f.exec.ScheduledAt, f.notBefore) }

// requeued is f as it goes back to be started again (its claim failed, its job's run ends,
// its job ran on another node): it keeps its quota slot, or it would start ahead of it, and
// its trace start.
func requeued(f *Fire) *pendingFire {
	return &pendingFire{exec: f.Execution, priority: 5, notBefore: f.notBefore, acquiredAt: f.acquiredAt}
}

// fireQueue is the in-memory heap of acquired fires, earliest first and, at the same
// millisecond, highest priority first. The firer sleeps until its head is due; changed tells
// it that a new head arrived.
type fireQueue struct {
	mu      sync.Mutex
	h       fireHeap
	in      map[int64]bool // the executions in h: a fire is held once
	changed chan struct{}
	closed  bool
	// held counts the fires pushed and not yet taken by the starter (in the heap or on their
	// way to it). At limit the acquirer waits for room: a node that cannot start its fires in
	// time must not take more, which would only grow its lateness and leave other nodes idle.
	held  int
	limit int
	room  chan struct{}
}

func newFireQueue(limit int) *fireQueue {
	return &fireQueue{in: map[int64]bool{}, changed: make(chan struct{}, 1), limit: limit, room: make(chan struct{}, 1)}
}

// full reports whether the queue holds its limit of fires.
// heldNow returns how many fires are held.
func (q *fireQueue) heldNow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}

func (q *fireQueue) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held >= q.limit
}

// hold counts n fires that re-enter the starter without passing through the heap.
func (q *fireQueue) hold(n int) {
	q.mu.Lock()
	q.held += n
	q.mu.Unlock()
}

// taken counts n fires the starter took, and signals room when the count falls below limit.
func (q *fireQueue) taken(n int) {
	q.mu.Lock()
	q.held -= n
	roomy := q.held < q.limit
	q.mu.Unlock()
	if roomy {
		select {
		case q.room <- struct{}{}:
		default:
		}
	}
}

func (q *fireQueue) push(fs ...*pendingFire) {
	if len(fs) == 0 {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	for _, f := range fs {
		// The same execution can come twice: acquired, handed back to pending by a leader
		// that took this node for dead, and acquired again. Both would win the one claim.
		if q.in[f.exec.ID] {
			continue
		}
		q.in[f.exec.ID] = true
		heap.Push(&q.h, f)
		q.held++
	}
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

// next returns the due time of the head, if any.
func (q *fireQueue) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(q.h[0].due()), true
}

// popDue removes and returns every fire due at or before now.
func (q *fireQueue) popDue(now time.Time) []*pendingFire {
	q.mu.Lock()
	defer q.mu.Unlock()
	ms := now.UnixMilli()
	var due []*pendingFire
	for len(q.h) > 0 && q.h[0].due() <= ms {
		f := heap.Pop(&q.h).(*pendingFire)
		delete(q.in, f.exec.ID)
		due = append(due, f)
	}
	return due
}

// close drops the queued fires; they stay acquired in the store until the node releases
// them (Stop) or the leader does (crash).
func (q *fireQueue) close() {
	q.mu.Lock()
	q.closed, q.h, q.in = true, nil, map[int64]bool{}
	q.mu.Unlock()
}

type fireHeap []*pendingFire

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	if a, b := h[i].due(), h[j].due(); a != b {
		return a < b
	}
	return h[i].priority > h[j].priority
}
func (h fireHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fireHeap) Push(x any)   { *h = append(*h, x.(*pendingFire)) }
func (h *fireHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return f
}
