package jobrun

import (
	"context"
	"fmt"
	"sync"
)

// Policy says what happens when a job's run arrives while an earlier run of it is active.
type Policy string

// The policies; the values are the ones stored with a job and sent to executors.
const (
	// Allow runs side by side.
	Allow Policy = "allow"
	// Serial queues the run until the active ones end, in arrival order.
	Serial Policy = "serial"
	// Discard skips the run while one is active.
	Discard Policy = "discard"
	// Replace cancels the active runs and runs the new one.
	Replace Policy = "replace"
)

// ParsePolicy parses a policy's name; the empty name is Allow.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return Allow, nil
	case Allow, Serial, Discard, Replace:
		return p, nil
	}
	return "", fmt.Errorf("unknown concurrency policy %q", s)
}

// Admission is what Admit decided for a run.
type Admission int

const (
	// Run: the run may start; it counts as active until Done.
	Run Admission = iota
	// Skip: the run must not start (Discard while another is active).
	Skip
	// Queued: the run waits in its job's queue; Done hands it back when its turn comes.
	Queued
)

// Tracker applies the concurrency policies to the runs of one node or one executor. T is what
// the owner keeps for a queued run, handed back by Done when the run's turn comes.
type Tracker[T any] struct {
	mu   sync.Mutex
	jobs map[int64]*jobRuns[T]
}

type jobRuns[T any] struct {
	active map[int64]context.CancelCauseFunc // run → its cancel, nil until Started
	queue  []queuedRun[T]                    // serial runs waiting, in arrival order
}

type queuedRun[T any] struct {
	id   int64
	item T
}

// NewTracker returns a Tracker with no runs.
func NewTracker[T any]() *Tracker[T] {
	return &Tracker[T]{jobs: map[int64]*jobRuns[T]{}}
}

func (t *Tracker[T]) job(id int64) *jobRuns[T] {
	j := t.jobs[id]
	if j == nil {
		j = &jobRuns[T]{active: map[int64]context.CancelCauseFunc{}}
		t.jobs[id] = j
	}
	return j
}

// forget drops a job's entry once it has neither active nor queued runs.
func (t *Tracker[T]) forget(id int64, j *jobRuns[T]) {
	if len(j.active) == 0 && len(j.queue) == 0 {
		delete(t.jobs, id)
	}
}

// Admit decides what happens to run id of job under policy p, and counts it as active when
// it may run. A job is busy while it has an active run; a run Done handed back is admitted
// again by its owner and runs, since nothing of its job is active then. Replace cancels the
// active runs with replaceCause (each reports its own end through Done). An unknown policy
// runs, as Allow.
func (t *Tracker[T]) Admit(job, id int64, p Policy, item T, replaceCause error) Admission {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(job)
	if len(j.active) > 0 {
		switch p {
		case Serial:
			j.queue = append(j.queue, queuedRun[T]{id: id, item: item})
			return Queued
		case Discard:
			return Skip
		case Replace:
			for _, cancel := range j.active {
				if cancel != nil {
					cancel(replaceCause)
				}
			}
		}
	}
	j.active[id] = nil
	return Run
}

// Holds reports whether run id of job is active (admitted and not Done).
func (t *Tracker[T]) Holds(job, id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[job]
	if j == nil {
		return false
	}
	_, ok := j.active[id]
	return ok
}

// Started records how to cancel an admitted run (for Replace and CancelAll).
func (t *Tracker[T]) Started(job, id int64, cancel context.CancelCauseFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j := t.jobs[job]; j != nil {
		if _, ok := j.active[id]; ok {
			j.active[id] = cancel
		}
	}
}

// Done forgets a finished (or never started) run. When its job then has no active run, it
// takes the first queued run off the queue and returns it: the owner must admit and start
// it, or hand it elsewhere, since the Tracker no longer holds it.
func (t *Tracker[T]) Done(job, id int64) (next T, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[job]
	if j == nil {
		return next, false
	}
	delete(j.active, id)
	if len(j.active) == 0 && len(j.queue) > 0 {
		next, ok = j.queue[0].item, true
		j.queue[0] = queuedRun[T]{}
		j.queue = j.queue[1:]
	}
	t.forget(job, j)
	return next, ok
}

// Unqueue removes a queued run; it reports false when the run is not queued.
func (t *Tracker[T]) Unqueue(job, id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[job]
	if j == nil {
		return false
	}
	for i, q := range j.queue {
		if q.id == id {
			j.queue = append(j.queue[:i:i], j.queue[i+1:]...)
			t.forget(job, j)
			return true
		}
	}
	return false
}

// TakeQueued removes and returns the queued runs of job.
func (t *Tracker[T]) TakeQueued(job int64) []T {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeQueuedLocked(job)
}

// TakeAllQueued removes and returns the queued runs of every job.
func (t *Tracker[T]) TakeAllQueued() []T {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []T
	for id := range t.jobs {
		out = append(out, t.takeQueuedLocked(id)...)
	}
	return out
}

func (t *Tracker[T]) takeQueuedLocked(job int64) []T {
	j := t.jobs[job]
	if j == nil {
		return nil
	}
	out := make([]T, 0, len(j.queue))
	for _, q := range j.queue {
		out = append(out, q.item)
	}
	j.queue = nil
	t.forget(job, j)
	return out
}

// CancelAll cancels every started run with cause.
func (t *Tracker[T]) CancelAll(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		for _, cancel := range j.active {
			if cancel != nil {
				cancel(cause)
			}
		}
	}
}

// Load returns how many runs of job are active and how many are queued.
func (t *Tracker[T]) Load(job int64) (active, queued int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j := t.jobs[job]; j != nil {
		return len(j.active), len(j.queue)
	}
	return 0, 0
}

// Cancel cancels the started run id (of whatever job) with cause; it reports whether it found
// one. A run admitted but not started yet has nothing to cancel.
func (t *Tracker[T]) Cancel(id int64, cause error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		if cancel := j.active[id]; cancel != nil {
			cancel(cause)
			return true
		}
	}
	return false
}

// Busy reports whether any run is active.
func (t *Tracker[T]) Busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		if len(j.active) > 0 {
			return true
		}
	}
	return false
}
