package engine

import (
	"slices"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestUnheld: a run the beating executor holds is never lost; one handed to another instance
// before this one took the address is lost at once; one handed to this instance (or to an
// unknown one), or to another instance after this one came (an instance read a moment too
// early, which the dispatcher sends again), only past the grace.
func TestUnheld(t *testing.T) {
	runs := []store.ExecutorRun{
		{ID: 1, Instance: "old", FiredAt: 900, DispatchedAt: 900}, // an earlier process's, recent: lost
		{ID: 2, Instance: "old", FiredAt: 100},                    // an earlier process's, held by the new one (a spooled result): kept
		{ID: 3, Instance: "new", FiredAt: 900},                    // this one's, recent, not held yet (a /run in flight): kept
		{ID: 4, Instance: "new", FiredAt: 100},                    // this one's, unreported past the grace: lost
		{ID: 5, Instance: "", FiredAt: 900},                       // a manual address's, recent: kept
		{ID: 6, Instance: "", FiredAt: 100},                       // a manual address's, past the grace: lost
		{ID: 7, Instance: "new", FiredAt: 100},                    // held: kept
		// this one's, fired long ago but dispatched just now (the database was out between):
		// its /run may be in flight: kept
		{ID: 8, Instance: "new", FiredAt: 100, DispatchedAt: 900},
		// recorded for the earlier process after this one took the address (at 950): the
		// executor refuses it and the dispatcher records it for this one: kept
		{ID: 9, Instance: "old", FiredAt: 950, DispatchedAt: 950},
		// recorded for the earlier process in the same millisecond this one came, and accepted
		// by it: that process had it: lost
		{ID: 10, Instance: "old", FiredAt: 950, DispatchedAt: 950, Accepted: true},
	}
	var got []int64
	for _, r := range unheld(runs, ExecutorBeat{Instance: "new", Held: []int64{2, 7}}, 950, 500) {
		got = append(got, r.ID)
	}
	if want := []int64{1, 4, 6, 10}; !slices.Equal(got, want) {
		t.Fatalf("unheld = %v, want %v", got, want)
	}
	if got := unheld(nil, ExecutorBeat{Instance: "new"}, 950, 500); len(got) != 0 {
		t.Fatalf("unheld of no runs = %v", got)
	}
}
