package engine

import "time"

// batchTarget is how long one batch of the fire path (an acquisition round's transaction, a
// claim) should take. Under overload a batch of BatchSize fires took over a second on a busy
// MariaDB and SQLite: the fires of a round or a claim start together when it ends, so the node
// fired in bursts with whole seconds at 0 between them, and on SQLite, whose one writer the
// batch holds, the heartbeat waited behind it.
const batchTarget = 250 * time.Millisecond

// batchSizer sizes the batches of one loop of the fire path (an acquirer, the starter) by
// one rule for every database: see next.
type batchSizer struct {
	size, floor, ceil int
}

// newBatchSizer starts at ceil (BatchSize): a node that is not overloaded never shrinks it,
// and its batches cost what they did.
func newBatchSizer(ceil int) *batchSizer {
	return &batchSizer{size: ceil, floor: max(1, ceil/10), ceil: ceil}
}

// next sizes the batch after one that carried n items (of size asked) and took took.
func (b *batchSizer) next(n int, took time.Duration) {
	b.size = nextBatchSize(b.size, n, b.floor, b.ceil, took, batchTarget)
}

// nextBatchSize is the rule. A batch that took longer than target halves the next one, down
// to floor: the time a batch takes grows with its fires, so smaller batches end sooner and
// the fires flow between them. A full batch (more work was waiting) that took less than half
// the target doubles the next, up to ceil. Otherwise the size stays: a batch that was not
// full says nothing about a larger one. Halving rather than cutting in proportion keeps one
// slow batch (a pause of the process, a lock held elsewhere) from collapsing the size, and
// the floor bounds the loss of throughput when a batch's time is mostly fixed cost, which
// smaller batches would not reduce.
func nextBatchSize(size, n, floor, ceil int, took, target time.Duration) int {
	switch {
	case took > target:
		size /= 2
	case took < target/2 && n >= size:
		size *= 2
	}
	return min(max(size, floor), ceil)
}
