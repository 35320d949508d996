package jobrun

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestTrackerBufferOneKeepsNewest: while run 1 is active, 2 and then 3 arrive; 3 takes 2's
// place (2 is handed back to be recorded skipped) and runs when 1 ends; 1 is never canceled.
func TestTrackerBufferOneKeepsNewest(t *testing.T) {
	tr := NewTracker[int64]()
	_, ctx1 := started(t, tr, 1, BufferOne)
	if a, dropped := tr.Admit(1, 2, Overlap{Policy: BufferOne}, 2, errReplaced); a != Queued || len(dropped) != 0 {
		t.Fatalf("run 2: %v dropped %v, want Queued, none", a, dropped)
	}
	if a, dropped := tr.Admit(1, 3, Overlap{Policy: BufferOne}, 3, errReplaced); a != Queued || !slices.Equal(dropped, []int64{2}) {
		t.Fatalf("run 3: %v dropped %v, want Queued, [2]", a, dropped)
	}
	if ctx1.Err() != nil {
		t.Fatal("buffer_one canceled the active run")
	}
	if next, ok := tr.Done(1, 1); !ok || next != 3 {
		t.Fatalf("after 1: next %d %v, want 3", next, ok)
	}
	if a, _ := started(t, tr, 3, BufferOne); a != Run {
		t.Fatalf("run 3 handed back: %v, want Run", a)
	}
}

// TestTrackerCancelWaitsForTheEnd: cancel asks the active run to stop (its context ends with
// the cause) and starts the new run only when the old one is Done; terminate starts it at once.
func TestTrackerCancelWaitsForTheEnd(t *testing.T) {
	tr := NewTracker[int64]()
	_, ctx1 := started(t, tr, 1, Cancel)
	if a, _ := started(t, tr, 2, Cancel); a != Queued {
		t.Fatalf("cancel while 1 runs: %v, want Queued", a)
	}
	if !errors.Is(context.Cause(ctx1), errReplaced) {
		t.Fatalf("run 1's cause %v, want it canceled", context.Cause(ctx1))
	}
	if a, dropped := tr.Admit(1, 3, Overlap{Policy: Cancel}, 3, errReplaced); a != Queued || !slices.Equal(dropped, []int64{2}) {
		t.Fatalf("run 3: %v dropped %v, want Queued, [2]", a, dropped)
	}
	if active, queued := tr.Load(1); active != 1 || queued != 1 {
		t.Fatalf("load %d active %d queued, want 1 1", active, queued)
	}
	if next, ok := tr.Done(1, 1); !ok || next != 3 {
		t.Fatalf("after 1: next %d %v, want 3", next, ok)
	}
	if a, _ := started(t, tr, 3, Cancel); a != Run {
		t.Fatalf("run 3 handed back: %v", a)
	}
	// Terminate: run 4 runs beside 3 (canceled) at once, and drops what waited.
	tr.Admit(1, 5, Overlap{Policy: BufferAll}, 5, nil)
	a, dropped := tr.Admit(1, 4, Overlap{Policy: Terminate}, 4, errReplaced)
	if a != Run || !slices.Equal(dropped, []int64{5}) {
		t.Fatalf("terminate: %v dropped %v, want Run, [5]", a, dropped)
	}
}

// TestTrackerAtMost: at_most 2 runs two side by side and queues the third until one ends.
func TestTrackerAtMost(t *testing.T) {
	tr := NewTracker[int64]()
	two := Overlap{Policy: AtMost, Max: 2}
	for _, id := range []int64{1, 2} {
		if a, _ := tr.Admit(1, id, two, id, nil); a != Run {
			t.Fatalf("run %d: %v, want Run", id, a)
		}
	}
	for _, id := range []int64{3, 4} {
		if a, _ := tr.Admit(1, id, two, id, nil); a != Queued {
			t.Fatalf("run %d beside two: %v, want Queued", id, a)
		}
	}
	next, ok := tr.Done(1, 2)
	if !ok || next != 3 {
		t.Fatalf("after 2: next %d %v, want 3", next, ok)
	}
	if a, _ := tr.Admit(1, 3, two, 3, nil); a != Run {
		t.Fatalf("run 3 handed back: %v", a)
	}
	if active, queued := tr.Load(1); active != 2 || queued != 1 {
		t.Fatalf("load %d %d, want 2 active 1 queued", active, queued)
	}
}

// TestParseOverlap: the one check of a policy and its limit, with the field it names.
func TestParseOverlap(t *testing.T) {
	if o, err := ParseOverlap("serial", 0); err != nil || o != (Overlap{Policy: BufferAll}) {
		t.Fatalf("serial: %v %v", o, err)
	}
	if o, err := ParseOverlap("at_most", 1000); err != nil || o.Limit() != 1000 {
		t.Fatalf("at_most 1000: %v %v", o, err)
	}
	for _, tc := range []struct {
		name  string
		max   int
		field string
	}{
		{"at_most", 0, "max_concurrent"}, {"at_most", 1001, "max_concurrent"}, {"at_most", -1, "max_concurrent"},
		{"skip", 3, "max_concurrent"}, {"sometimes", 0, "concurrency"},
	} {
		_, err := ParseOverlap(tc.name, tc.max)
		var oe *OverlapError
		if !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("ParseOverlap(%q, %d) = %v, want an error in %s", tc.name, tc.max, err, tc.field)
		}
	}
}
