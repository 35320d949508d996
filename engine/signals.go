package engine

import "github.com/sundial-scheduler/sundial/store"

// testSignals lets tests wait for what the engine did instead of sleeping. It is nil outside
// tests, and its methods are then no-ops.
type testSignals struct {
	acquired  chan int         // after every acquisition round: fires taken
	completed chan int64       // every execution whose result was written
	recovered chan string      // every dead node the leader recovered
	lostRace  chan int64       // every fire this node acquired but another node ran
	claimed   chan int64       // every fire this node won (acquired -> running)
	claiming  chan int         // before every claim statement: fires it claims
	queued    chan int64       // every fire queued behind a running one (concurrency serial)
	rejoined  chan store.Owner // every new life the node began after it was declared dead
	busy      chan int64       // every fire left waiting while its job ran on another node
	backfill  chan int         // after every backfill round that found a backfill: runs made
	workflows chan int64       // every workflow run that ended, once committed
}

func newTestSignals() *testSignals {
	const buffer = 1 << 16
	return &testSignals{
		acquired:  make(chan int, buffer),
		completed: make(chan int64, buffer),
		recovered: make(chan string, buffer),
		lostRace:  make(chan int64, buffer),
		claimed:   make(chan int64, buffer),
		claiming:  make(chan int, buffer),
		queued:    make(chan int64, buffer),
		rejoined:  make(chan store.Owner, buffer),
		busy:      make(chan int64, buffer),
		backfill:  make(chan int, buffer),
		workflows: make(chan int64, buffer),
	}
}

func (s *testSignals) roundAcquired(n int) {
	if s != nil {
		trySend(s.acquired, n)
	}
}

func (s *testSignals) executionCompleted(id int64) {
	if s != nil {
		trySend(s.completed, id)
	}
}

func (s *testSignals) nodeRecovered(node string) {
	if s != nil {
		trySend(s.recovered, node)
	}
}

func (s *testSignals) fireClaimed(id int64) {
	if s != nil {
		trySend(s.claimed, id)
	}
}

func (s *testSignals) claimSent(n int) {
	if s != nil {
		trySend(s.claiming, n)
	}
}

func (s *testSignals) fireQueued(id int64) {
	if s != nil {
		trySend(s.queued, id)
	}
}

func (s *testSignals) fireBusy(id int64) {
	if s != nil {
		trySend(s.busy, id)
	}
}

func (s *testSignals) raceLost(id int64) {
	if s != nil {
		trySend(s.lostRace, id)
	}
}

func (s *testSignals) nodeRejoined(o store.Owner) {
	if s != nil {
		trySend(s.rejoined, o)
	}
}

func (s *testSignals) backfillStepped(n int) {
	if s != nil {
		trySend(s.backfill, n)
	}
}

// trySend never blocks: a test that does not read a signal must not stall the engine.
func trySend[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

func (s *testSignals) workflowsEnded(ids []int64) {
	if s != nil {
		for _, id := range ids {
			trySend(s.workflows, id)
		}
	}
}
