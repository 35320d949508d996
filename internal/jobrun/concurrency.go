package jobrun

import (
	"context"
	"fmt"
	"sync"
)

// Policy says what happens when a job's run arrives while an earlier run of it is active: the
// job's overlap policy. It is the one rule the engine's nodes and the executors apply (through
// Tracker), and the one the workflows reuse; docs/policies.md ("Overlap") shows each on a
// timeline.
type Policy string

// The policies; the values are the ones stored with a job and sent to executors.
const (
	// Allow runs side by side.
	Allow Policy = "allow"
	// Skip drops the run while one is active (XXL-JOB DISCARD_LATER).
	Skip Policy = "skip"
	// BufferOne keeps the run until the active one ends; of runs waiting at once only the
	// newest is kept, the older ones are skipped.
	BufferOne Policy = "buffer_one"
	// BufferAll queues the run until the active ones end, in arrival order (Quartz
	// @DisallowConcurrentExecution, XXL-JOB SERIAL_EXECUTION).
	BufferAll Policy = "buffer_all"
	// Cancel asks the active runs to stop (their context is canceled) and starts the run once
	// they have ended; like BufferOne, only the newest waiting run is kept.
	Cancel Policy = "cancel"
	// Terminate kills the active runs and starts the run at once, without waiting for them
	// (XXL-JOB COVER_EARLY).
	Terminate Policy = "terminate"
	// AtMost runs up to Overlap.Max runs side by side; further runs queue as for BufferAll.
	AtMost Policy = "at_most"
)

// The names the policies had before overlap policies; input still accepts them.
const (
	Serial  Policy = "serial"  // BufferAll
	Discard Policy = "discard" // Skip
	Replace Policy = "replace" // Terminate: the running fire was canceled and the new one started at once
)

// Policies are the policies, in the order forms and errors list them.
var Policies = []Policy{Allow, Skip, BufferOne, BufferAll, Cancel, Terminate, AtMost}

// MaxLimit is the largest Max of an AtMost policy.
const MaxLimit = 1000

var aliases = map[Policy]Policy{Serial: BufferAll, Discard: Skip, Replace: Terminate}

// ParsePolicy parses a policy's name or old name (serial, discard, replace); the empty name
// is Allow.
func ParsePolicy(s string) (Policy, error) {
	p := Policy(s)
	if a, ok := aliases[p]; ok {
		return a, nil
	}
	switch p {
	case "":
		return Allow, nil
	case Allow, Skip, BufferOne, BufferAll, Cancel, Terminate, AtMost:
		return p, nil
	}
	return "", fmt.Errorf("want one of allow, skip, buffer_one, buffer_all, cancel, terminate, at_most (or serial, discard, replace), got %q", s)
}

// Sent is the name a server sends an executor for p: the old name when p has one, which
// executors of every version read, else p's.
func (p Policy) Sent() string {
	for old, now := range aliases {
		if now == p {
			return string(old)
		}
	}
	return string(p)
}

// Overlap is a job's overlap policy with its limit.
type Overlap struct {
	Policy Policy
	// Max is how many runs AtMost lets run side by side (1 to MaxLimit); 0 for the others.
	Max int
}

// OverlapError is a bad overlap policy; Field names the field as the API does
// ("concurrency", "max_concurrent").
type OverlapError struct {
	Field string
	Msg   string
}

func (e *OverlapError) Error() string { return e.Field + ": " + e.Msg }

// ParseOverlap checks a policy's name and limit as a job gives them; this is the one check of
// both (the scheduler's, and the executor's of what a server sent).
func ParseOverlap(name string, max int) (Overlap, error) {
	p, err := ParsePolicy(name)
	if err != nil {
		return Overlap{}, &OverlapError{Field: "concurrency", Msg: err.Error()}
	}
	switch {
	case p == AtMost && (max < 1 || max > MaxLimit):
		return Overlap{}, &OverlapError{Field: "max_concurrent", Msg: fmt.Sprintf("want 1 to %d with concurrency at_most, got %d", MaxLimit, max)}
	case p != AtMost && max != 0:
		return Overlap{}, &OverlapError{Field: "max_concurrent", Msg: fmt.Sprintf("only concurrency at_most takes a limit, got %d with %s", max, p)}
	}
	return Overlap{Policy: p, Max: max}, nil
}

// Limit is how many runs of the job may be active at once; 0 means any number.
func (o Overlap) Limit() int {
	switch o.Policy {
	case Allow, "":
		return 0
	case AtMost:
		return max(o.Max, 1)
	}
	return 1
}

// Admission is what Admit decided for a run.
type Admission int

const (
	// Run: the run may start; it counts as active until Done.
	Run Admission = iota
	// Skip: the run must not start (Skip while another is active).
	Skipped
	// Queued: the run waits in its job's queue; Done hands it back when its turn comes.
	Queued
)

// Tracker applies the overlap policies to the runs of one node or one executor. T is what
// the owner keeps for a queued run, handed back by Done when the run's turn comes.
type Tracker[T any] struct {
	mu   sync.Mutex
	jobs map[int64]*jobRuns[T]
}

type jobRuns[T any] struct {
	active map[int64]context.CancelCauseFunc // run → its cancel, nil until Started
	queue  []queuedRun[T]                    // runs waiting, in arrival order
	limit  int                               // the job's Overlap.Limit at its last Admit
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

// Admit decides what happens to run id of job under policy o, and counts it as active when
// it may run. A job is full while it has Limit active runs; a run Done handed back is
// admitted again by its owner and runs, since its job has room then. Cancel and Terminate
// cancel the active runs with cause (each reports its own end through Done). The runs it
// returns were waiting and are dropped for this one (BufferOne, Cancel, Terminate): the owner
// records them skipped, as the Tracker no longer holds them. An unknown policy runs, as Allow.
func (t *Tracker[T]) Admit(job, id int64, o Overlap, item T, cause error) (Admission, []T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(job)
	j.limit = o.Limit()
	d := o.Decide(len(j.active))
	var dropped []T
	if d.DropQueued {
		dropped = j.takeQueue()
	}
	if d.CancelActive {
		for _, cancel := range j.active {
			if cancel != nil {
				cancel(cause)
			}
		}
	}
	switch d.Admission {
	case Skipped:
		return Skipped, nil
	case Queued:
		j.queue = append(j.queue, queuedRun[T]{id: id, item: item})
		return Queued, dropped
	}
	j.active[id] = nil
	return Run, dropped
}

// Decision is what an overlap policy does with a run that arrives while others are active.
type Decision struct {
	Admission Admission
	// DropQueued: the runs waiting are dropped for this one, to be recorded skipped.
	DropQueued bool
	// CancelActive: the active runs are asked to stop.
	CancelActive bool
}

// Decide is the overlap rule itself: what o does with a run that arrives while active runs
// are active. Tracker applies it to one node's or executor's runs; the engine applies it to
// a workflow's runs, counted under the workflow's row lock. An unknown policy runs, as Allow.
func (o Overlap) Decide(active int) Decision {
	if active == 0 {
		return Decision{Admission: Run}
	}
	switch o.Policy {
	case Skip:
		return Decision{Admission: Skipped}
	case BufferAll, AtMost:
		if active >= o.Limit() {
			return Decision{Admission: Queued}
		}
	case BufferOne:
		return Decision{Admission: Queued, DropQueued: true}
	case Cancel:
		return Decision{Admission: Queued, DropQueued: true, CancelActive: true}
	case Terminate:
		return Decision{Admission: Run, DropQueued: true, CancelActive: true}
	}
	return Decision{Admission: Run}
}

func (j *jobRuns[T]) takeQueue() []T {
	out := make([]T, 0, len(j.queue))
	for _, q := range j.queue {
		out = append(out, q.item)
	}
	j.queue = nil
	return out
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

// Done forgets a finished (or never started) run. When its job then has room for another
// active run (its policy's Limit), it takes the first queued run off the queue and returns it: the owner must admit and start
// it, or hand it elsewhere, since the Tracker no longer holds it.
func (t *Tracker[T]) Done(job, id int64) (next T, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[job]
	if j == nil {
		return next, false
	}
	delete(j.active, id)
	if len(j.queue) > 0 && (j.limit == 0 || len(j.active) < j.limit) {
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
