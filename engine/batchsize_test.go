package engine

import (
	"testing"
	"time"
)

// TestNextBatchSize pins the one rule that sizes the fire path's batches (acquisition rounds,
// claims) on every database.
func TestNextBatchSize(t *testing.T) {
	const target = 250 * time.Millisecond
	ms := time.Millisecond
	for _, tc := range []struct {
		name                 string
		size, n, floor, ceil int
		took                 time.Duration
		want                 int
	}{
		{"fast full batch at the ceiling stays", 1000, 1000, 100, 1000, 10 * ms, 1000},
		{"slow batch halves", 1000, 1000, 100, 1000, 1200 * ms, 500},
		{"just over the target halves", 1000, 1000, 100, 1000, target + ms, 500},
		{"at the target stays", 500, 500, 100, 1000, target, 500},
		{"slow batch that was not full halves too", 1000, 300, 100, 1000, 900 * ms, 500},
		{"halving stops at the floor", 150, 150, 100, 1000, 2 * time.Second, 100},
		{"at the floor stays there when slow", 100, 100, 100, 1000, 2 * time.Second, 100},
		{"fast full batch doubles", 200, 200, 100, 1000, 50 * ms, 400},
		{"doubling stops at the ceiling", 800, 800, 100, 1000, 50 * ms, 1000},
		{"fast batch that was not full stays", 200, 150, 100, 1000, 50 * ms, 200},
		{"full batch between half the target and the target stays", 400, 400, 100, 1000, 200 * ms, 400},
		{"exactly half the target does not grow", 400, 400, 100, 1000, target / 2, 400},
		{"a fake clock (no time passes) never shrinks", 1000, 1000, 100, 1000, 0, 1000},
		{"tiny batch sizes keep a floor of one", 1, 1, 1, 5, time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextBatchSize(tc.size, tc.n, tc.floor, tc.ceil, tc.took, target); got != tc.want {
				t.Errorf("nextBatchSize(size %d, n %d, floor %d, ceil %d, took %s) = %d, want %d",
					tc.size, tc.n, tc.floor, tc.ceil, tc.took, got, tc.want)
			}
		})
	}
}

// TestBatchSizerConverges runs the rule against a database whose batches take a fixed cost
// plus a cost per fire: the size settles where batches take at most the target and at least
// half of it (or at the floor, when the fixed cost alone passes the target), and a slow
// spell's shrink grows back once batches are fast again.
func TestBatchSizerConverges(t *testing.T) {
	run := func(b *batchSizer, fixed, perFire time.Duration, rounds int) {
		for range rounds {
			n := b.size // overloaded: every batch is full
			b.next(n, fixed+time.Duration(n)*perFire)
		}
	}
	b := newBatchSizer(1000)
	if b.size != 1000 || b.floor != 100 {
		t.Fatalf("new sizer: size %d floor %d, want 1000 and 100", b.size, b.floor)
	}
	// 1 ms a fire: 1,000 fires take a second.
	run(b, 20*time.Millisecond, time.Millisecond, 20)
	if took := 20*time.Millisecond + time.Duration(b.size)*time.Millisecond; took > batchTarget || took < batchTarget/2 {
		t.Errorf("slow database: settled at %d fires a batch (%s), want batches of %s to %s", b.size, took, batchTarget/2, batchTarget)
	}
	// The database is fast again: back to the ceiling.
	run(b, time.Millisecond, time.Microsecond, 10)
	if b.size != 1000 {
		t.Errorf("fast again: %d fires a batch, want the ceiling 1000", b.size)
	}
	// The fixed cost alone passes the target: the floor, not less.
	run(b, time.Second, time.Microsecond, 20)
	if b.size != 100 {
		t.Errorf("fixed cost over the target: %d fires a batch, want the floor 100", b.size)
	}
}
