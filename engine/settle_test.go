package engine

import (
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestSettleKeepsOneCopy: of a round whose commit went unanswered, a fire is kept only when
// its execution is acquired by this life for the same fire and no other round of the life
// queued it after the commit began (that round's copy is then the one to run).
func TestSettleKeepsOneCopy(t *testing.T) {
	o := store.Owner{Node: "n", Incarnation: "2"}
	fire := func(id int64) *pendingFire {
		return &pendingFire{exec: &store.Execution{ID: id, JobID: 7, TriggerID: 9, ScheduledAt: 1000 * id}}
	}
	var r rounds
	r.queued([]*pendingFire{fire(1)}) // no commit open: not remembered
	earlier := r.committing()
	r.queued([]*pendingFire{fire(2)}) // queued by a round that committed before
	lost := r.committing()
	r.settled(earlier)
	r.queued([]*pendingFire{fire(3)}) // another round took #3 after the lost commit began
	elsewhere := r.queuedSince(lost)
	if !elsewhere[3] || elsewhere[2] || elsewhere[1] {
		t.Fatalf("queued since the lost commit: %v, want only 3", elsewhere)
	}

	acquired := func(id int64, owner store.Owner) *store.Execution {
		x := *fire(id).exec
		x.State, x.Node, x.Incarnation = store.ExecAcquired, owner.Node, owner.Incarnation
		return &x
	}
	other := acquired(5, o)
	other.ScheduledAt++ // the id given again to another fire
	running := acquired(6, o)
	running.State = store.ExecRunning
	fires := []*pendingFire{fire(2), fire(3), fire(4), fire(5), fire(6), fire(8)}
	execs := []*store.Execution{acquired(2, o), acquired(3, o), acquired(4, store.Owner{Node: "m", Incarnation: "1"}), other, running}
	var kept []int64
	for _, f := range tookBy(o, fires, execs, elsewhere) {
		kept = append(kept, f.exec.ID)
	}
	if len(kept) != 1 || kept[0] != 2 {
		t.Fatalf("kept %v, want [2]: 3 queued by another round, 4 another node's, 5 another fire, 6 running, 8 gone", kept)
	}

	r.settled(lost)
	if len(r.open) != 0 || len(r.queues) != 0 {
		t.Fatalf("after every commit settled: open %v, %d queues remembered", r.open, len(r.queues))
	}
}
