package engine

import (
	"context"

	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
)

// admission is what the overlap policy decided for a due fire.
type admission = jobrun.Admission

const (
	admitRun    = jobrun.Run
	admitSkip   = jobrun.Skipped
	admitQueued = jobrun.Queued
	// admitHeld: the node already starts or runs this execution (a second copy of it, see
	// fireQueue.push): the copy is dropped, since its claim would be lost and forgetting it
	// would forget the run.
	admitHeld admission = -1
)

// overlapOf is a job's overlap policy. A stored name the policy does not know (written by a
// newer version) runs as allow, as the Tracker runs an unknown policy.
func overlapOf(job *store.Job) jobrun.Overlap {
	p, err := jobrun.ParsePolicy(string(job.Concurrency))
	if err != nil {
		p = jobrun.Allow
	}
	return jobrun.Overlap{Policy: p, Max: job.MaxConcurrent}
}

// concurrency applies jobs' overlap policies to the fires of this node, with the rules
// executors apply too (jobrun.Tracker): buffered fires wait in a per-job queue (still
// acquired in the store, so a crash hands them to another node), skip drops a fire while one
// runs, cancel and terminate cancel the running fire. Across nodes, claimFires keeps them.
type concurrency struct {
	t *jobrun.Tracker[*pendingFire]
}

func newConcurrency() *concurrency {
	return &concurrency{t: jobrun.NewTracker[*pendingFire]()}
}

// admit decides what happens to a due fire and, when it may run, counts it as active. It
// also returns the fires that waited and that this one displaced (buffer_one, cancel,
// terminate): they are to be recorded skipped.
func (c *concurrency) admit(f *Fire) (admission, []*pendingFire) {
	if c.t.Holds(f.Job.ID, f.Execution.ID) {
		return admitHeld, nil
	}
	return c.t.Admit(f.Job.ID, f.Execution.ID, overlapOf(f.Job),
		requeued(f), errReplaced)
}

// running records how to cancel a started fire (for cancel and terminate).
func (c *concurrency) running(f *Fire, cancel context.CancelCauseFunc) {
	c.t.Started(f.Job.ID, f.Execution.ID, cancel)
}

// done forgets a finished (or never started) fire and returns the job's next queued fire.
func (c *concurrency) done(f *Fire) *pendingFire {
	next, _ := c.t.Done(f.Job.ID, f.Execution.ID)
	return next
}

// appendDone is done, appending the job's next queued fire (if any) to next: that fire must
// be started, or it stays acquired by this node until it stops.
func (c *concurrency) appendDone(next []*pendingFire, f *Fire) []*pendingFire {
	if p := c.done(f); p != nil {
		return append(next, p)
	}
	return next
}

// dropQueued forgets the queued fires when the node stops; they stay acquired in the store.
func (c *concurrency) dropQueued() {
	c.t.TakeAllQueued()
}
