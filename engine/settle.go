package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sundial-scheduler/sundial/store"
)

// An acquisition round whose commit fails may have been applied all the same: the
// connection dropped between the commit and its answer, as when the database fails over.
// Its fires would then be acquired by this life with nothing in memory to start them, and
// no one else releases the acquired fires of a life the cluster counts alive. So the round
// is settled: once the database answers, the node reads its executions back and queues
// those the round took.
//
// A fire must never be held twice in one life's memory: the claim of one copy would be
// counted by the other as its own earlier, unanswered claim (recoverUnsure), and both would
// run. If the round was not applied, its pending executions were free again and another
// round of this life may have taken them; its copies are the ones kept. rounds tells them
// apart: every round in flight holds gate shared until its fires are queued, the settling
// round holds it alone while it reads, and the fires queued since the unanswered commit
// began are remembered until no commit is unsettled.

// unansweredCommit is an acquisition round whose commit failed.
type unansweredCommit struct {
	round uint64
	fires []*pendingFire
	err   error
}

func (u *unansweredCommit) Error() string {
	return fmt.Sprintf("commit acquisition of %d fires: %v", len(u.fires), u.err)
}

func (u *unansweredCommit) Unwrap() error { return u.err }

// rounds orders a life's acquisition rounds with the settling of one whose commit went
// unanswered.
type rounds struct {
	gate sync.RWMutex

	mu     sync.Mutex
	seq    uint64
	open   []uint64 // commits begun and not settled, ascending
	queues []queuedRound
}

// queuedRound is the fires a round queued, after the commits open then began.
type queuedRound struct {
	seq   uint64
	fires []*pendingFire
}

// committing registers a commit about to begin and returns its place in the order.
func (r *rounds) committing() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.open = append(r.open, r.seq)
	return r.seq
}

// queued records fires a round queued, while some commit is open.
func (r *rounds) queued(fires []*pendingFire) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.open) == 0 {
		return
	}
	r.seq++
	r.queues = append(r.queues, queuedRound{seq: r.seq, fires: fires})
}

// queuedSince lists the executions queued after the commit numbered round began.
func (r *rounds) queuedSince(round uint64) map[int64]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := map[int64]bool{}
	for _, q := range r.queues {
		if q.seq > round {
			for _, f := range q.fires {
				ids[f.exec.ID] = true
			}
		}
	}
	return ids
}

// settled closes the commit numbered round, and forgets what no open commit needs.
func (r *rounds) settled(round uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.open, round); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
	if len(r.open) == 0 {
		r.queues = r.queues[:0]
		return
	}
	oldest := r.open[0]
	r.queues = slices.DeleteFunc(r.queues, func(q queuedRound) bool { return q.seq < oldest })
}

// settleRound reads back the executions of a round whose commit went unanswered, asking
// until the database answers or the life ends (its acquired fires are then released with the
// rest), and queues the fires the round took: those acquired by this life that no other
// round queued since.
func (e *Engine) settleRound(l *lifecycle, u *unansweredCommit) {
	defer l.rounds.settled(u.round)
	l.rounds.gate.Lock()
	defer l.rounds.gate.Unlock()
	ids := make([]int64, len(u.fires))
	for i, f := range u.fires {
		ids[i] = f.exec.ID
	}
	for {
		ctx, cancel := context.WithTimeout(l.ctx, storeTimeout)
		execs, err := e.store.ExecutionsGet(ctx, ids)
		cancel()
		if err == nil {
			took := tookBy(l.owner, u.fires, execs, l.rounds.queuedSince(u.round))
			e.log.Warn("settled an acquisition whose commit went unanswered", "fires", len(u.fires), "taken", len(took))
			e.queueAcquired(l.ctx, l, took)
			return
		}
		if l.ctx.Err() != nil {
			return
		}
		e.log.Error("settle an acquisition whose commit went unanswered; retrying", "err", err, "fires", len(u.fires))
		if !e.sleep(l.ctx, e.cfg.PollInterval, nil) {
			return
		}
	}
}

// tookBy returns the fires whose execution, as read back, o holds acquired for the same fire
// and no other round queued: the fires an unanswered round took.
func tookBy(o store.Owner, fires []*pendingFire, execs []*store.Execution, queuedElsewhere map[int64]bool) []*pendingFire {
	byID := make(map[int64]*store.Execution, len(execs))
	for _, x := range execs {
		byID[x.ID] = x
	}
	var took []*pendingFire
	for _, f := range fires {
		x := byID[f.exec.ID]
		if x == nil || queuedElsewhere[x.ID] || x.State != store.ExecAcquired || store.OwnerOf(x) != o {
			continue
		}
		// An id a rolled-back insert had used can be given again (SQLite): the same fire only.
		if x.JobID != f.exec.JobID || x.TriggerID != f.exec.TriggerID || x.ScheduledAt != f.exec.ScheduledAt ||
			x.Attempt != f.exec.Attempt || x.ShardIndex != f.exec.ShardIndex {
			continue
		}
		took = append(took, f)
	}
	return took
}
