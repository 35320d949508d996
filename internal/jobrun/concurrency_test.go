package jobrun

import (
	"context"
	"errors"
	"testing"
)

var errReplaced = errors.New("replaced")

// started admits run id of job 1 under p and, when it runs, records a cancel; it returns the
// admission and the run's context.
func started(t *testing.T, tr *Tracker[int64], id int64, p Policy) (Admission, context.Context) {
	t.Helper()
	a, _ := tr.Admit(1, id, Overlap{Policy: p}, id, errReplaced)
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	if a == Run {
		tr.Started(1, id, cancel)
	}
	return a, ctx
}

func TestTrackerBufferAllQueuesInOrder(t *testing.T) {
	tr := NewTracker[int64]()
	if a, _ := started(t, tr, 1, BufferAll); a != Run {
		t.Fatalf("run 1 of an idle job: %v, want Run", a)
	}
	for _, id := range []int64{2, 3} {
		if a, _ := started(t, tr, id, BufferAll); a != Queued {
			t.Fatalf("run %d while 1 is active: %v, want Queued", id, a)
		}
	}
	if a, q := tr.Load(1); a != 1 || q != 2 {
		t.Fatalf("load %d active %d queued, want 1 and 2", a, q)
	}
	// Another job is not held up by job 1.
	if a, _ := tr.Admit(2, 10, Overlap{Policy: BufferAll}, 10, nil); a != Run {
		t.Fatalf("other job: %v", a)
	}
	next, ok := tr.Done(1, 1)
	if !ok || next != 2 {
		t.Fatalf("after 1: next %d %v, want 2", next, ok)
	}
	// The run handed back runs when admitted again, ahead of the rest of the queue.
	if a, _ := started(t, tr, next, BufferAll); a != Run {
		t.Fatalf("run 2 handed back: %v, want Run", a)
	}
	if next, ok := tr.Done(1, 2); !ok || next != 3 {
		t.Fatalf("after 2: next %d %v, want 3", next, ok)
	}
	started(t, tr, 3, BufferAll)
	if next, ok := tr.Done(1, 3); ok {
		t.Fatalf("after 3: next %d, want none", next)
	}
	if a, q := tr.Load(1); a != 0 || q != 0 {
		t.Fatalf("load %d %d after all ended", a, q)
	}
}

func TestTrackerSkipAllowTerminate(t *testing.T) {
	tr := NewTracker[int64]()
	started(t, tr, 1, Skip)
	if a, _ := started(t, tr, 2, Skip); a != Skipped {
		t.Fatalf("discard while one runs: %v", a)
	}
	tr.Done(1, 1)
	if a, _ := started(t, tr, 3, Skip); a != Run {
		t.Fatalf("discard when idle: %v", a)
	}
	tr.Done(1, 3)

	_, ctx1 := started(t, tr, 4, Allow)
	if a, _ := started(t, tr, 5, Allow); a != Run {
		t.Fatalf("allow side by side: %v", a)
	}
	if a, _ := started(t, tr, 6, "bogus"); a != Run {
		t.Fatalf("unknown policy: %v, want it to run as allow", a)
	}
	if ctx1.Err() != nil {
		t.Fatal("allow canceled a run")
	}
	if a, ctx7 := started(t, tr, 7, Terminate); a != Run || ctx7.Err() != nil {
		t.Fatalf("replace: %v %v", a, ctx7.Err())
	}
	if !errors.Is(context.Cause(ctx1), errReplaced) {
		t.Fatalf("replaced run's cause: %v", context.Cause(ctx1))
	}
	if active, queued := tr.Load(1); active != 4 || queued != 0 {
		t.Fatalf("replaced runs stay active until Done: %d active, %d queued", active, queued)
	}
}

func TestTrackerUnqueueTakeCancel(t *testing.T) {
	tr := NewTracker[int64]()
	started(t, tr, 1, BufferAll)
	for _, id := range []int64{2, 3, 4} {
		started(t, tr, id, BufferAll)
	}
	if !tr.Unqueue(1, 3) || tr.Unqueue(1, 3) || tr.Unqueue(1, 1) {
		t.Fatal("Unqueue: want true for a queued run only, once")
	}
	if got := tr.TakeQueued(1); len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("TakeQueued: %v, want [2 4]", got)
	}
	if _, ok := tr.Done(1, 1); ok {
		t.Fatal("a taken queue handed a run back")
	}
	started(t, tr, 5, BufferAll)
	started(t, tr, 6, BufferAll)
	tr.Admit(2, 7, Overlap{Policy: BufferAll}, 7, nil)
	tr.Admit(2, 8, Overlap{Policy: BufferAll}, 8, nil)
	if got := tr.TakeAllQueued(); len(got) != 2 {
		t.Fatalf("TakeAllQueued: %v, want runs 6 and 8", got)
	}
	_, ctx := started(t, tr, 9, Allow)
	tr.CancelAll(errReplaced)
	if !errors.Is(context.Cause(ctx), errReplaced) {
		t.Fatalf("CancelAll: cause %v", context.Cause(ctx))
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"": Allow, "allow": Allow, "serial": BufferAll, "discard": Skip, "replace": Terminate,
		"skip": Skip, "buffer_one": BufferOne, "buffer_all": BufferAll, "cancel": Cancel, "terminate": Terminate, "at_most": AtMost} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParsePolicy("Serial"); err == nil {
		t.Error(`ParsePolicy("Serial"): want an error`)
	}
}

// TestTrackerCancelByID: a kill finds a started run by its id alone; Busy follows the active
// runs.
func TestTrackerCancelByID(t *testing.T) {
	tr := NewTracker[int64]()
	if tr.Busy() {
		t.Fatal("an empty tracker is busy")
	}
	if a, _ := tr.Admit(3, 30, Overlap{Policy: Allow}, 30, nil); a != Run || !tr.Busy() {
		t.Fatal("an admitted run makes the tracker busy")
	}
	if tr.Cancel(30, errReplaced) {
		t.Fatal("cancelled a run that has not started")
	}
	_, ctx := started(t, tr, 31, Allow)
	if !tr.Cancel(31, errReplaced) || !errors.Is(context.Cause(ctx), errReplaced) {
		t.Fatalf("Cancel(31): cause %v", context.Cause(ctx))
	}
	if tr.Cancel(99, errReplaced) {
		t.Fatal("cancelled an unknown run")
	}
	tr.Done(3, 30)
	tr.Done(1, 31)
	if tr.Busy() {
		t.Fatal("busy after every run is done")
	}
}
