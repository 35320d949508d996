package engine

import (
	"context"

	"github.com/sundial-scheduler/sundial/store"
)

// busyRetryDelay is how often a fire whose job runs on another node asks again whether it may
// start.
const busyRetryDelay = markRetryDelay

// claim is the outcome of one claim of fires.
type claim struct {
	won       map[int64]bool // the fires this node may run
	busy      map[int64]bool // fires left acquired: their job runs on another node
	discarded map[int64]bool // won, but their discard job runs on another node: skip them
}

// runsAlone reports whether a job's fires must not run beside each other across the cluster.
// Jobs that allow it pay nothing; remote jobs are the executor's to keep apart.
func runsAlone(job *store.Job) bool {
	return job.TargetKind == store.TargetLocal && job.Concurrency != "" && job.Concurrency != store.ConcurrencyAllow
}

// claimFires wins fires with the acquired → running compare-and-set. The node's concurrency
// tracker has already kept this node's fires apart; the fires in alone are those of jobs
// whose policy must also hold across nodes, claimed under their job's row lock
// (ExecutionsMarkRunningAlone). Of those, a fire whose job runs on another node is busy and
// stays acquired, except for a discard job: its fire is claimed all the same, to be skipped.
func (e *Engine) claimFires(ctx context.Context, o store.Owner, plain []int64, alone []*Fire, firedAt int64) (claim, error) {
	c := claim{won: map[int64]bool{}, busy: map[int64]bool{}, discarded: map[int64]bool{}}
	if len(plain) > 0 {
		won, err := e.store.ExecutionsMarkRunning(ctx, o, plain, firedAt)
		if err != nil {
			return c, err
		}
		addIDs(c.won, won)
	}
	if len(alone) == 0 {
		return c, nil
	}
	ids := make([]int64, len(alone))
	for i, f := range alone {
		ids[i] = f.Execution.ID
	}
	won, busy, err := e.store.ExecutionsMarkRunningAlone(ctx, o, ids, firedAt)
	if err != nil {
		return c, err
	}
	addIDs(c.won, won)
	addIDs(c.busy, busy)
	var discard []int64
	replaced := map[int64]bool{}
	for _, f := range alone {
		if !c.busy[f.Execution.ID] {
			continue
		}
		switch f.Job.Concurrency {
		case store.ConcurrencyDiscard:
			discard = append(discard, f.Execution.ID)
		case store.ConcurrencyReplace:
			if !replaced[f.Job.ID] {
				replaced[f.Job.ID] = true
				e.replaceElsewhere(ctx, o, f.Job.ID)
			}
		}
	}
	if len(discard) > 0 {
		won, err := e.store.ExecutionsMarkRunning(ctx, o, discard, firedAt)
		if err != nil {
			return c, err
		}
		for _, id := range discard {
			delete(c.busy, id)
		}
		addIDs(c.won, won)
		addIDs(c.discarded, won)
	}
	return c, nil
}

// replaceElsewhere asks the other nodes that run job to kill their runs of it, for a replace
// job's newer fire: the kill request each node reads while it runs handlers (Kill). The fire
// stays busy, and is claimed when those runs have ended. A request that fails is only
// logged: the fire asks again after busyRetryDelay, and a request repeated is a no-op.
func (e *Engine) replaceElsewhere(ctx context.Context, o store.Owner, job int64) {
	running, err := e.store.ExecutionList(ctx, store.ExecutionFilter{JobID: job, State: store.ExecRunning})
	if err != nil {
		e.log.Error("listing the runs a replace fire replaces", "job", job, "err", err)
		return
	}
	for _, x := range running {
		if x.ExecutorAddress != "" || store.OwnerOf(x) == o {
			continue // an executor's (not a job that runs alone), or this node's own run
		}
		if err := e.store.KillRequest(ctx, x.ID, x.Node); err != nil {
			e.log.Error("asking another node to kill the run a replace fire replaces", "execution", x.ID, "node", x.Node, "err", err)
			continue
		}
		e.log.Info("replacing a run on another node (concurrency policy replace)", "execution", x.ID, "node", x.Node, "job", job)
	}
}

// waitBusy asks again, after busyRetryDelay, to start a fire whose job ran on another node.
// The fire stays counted as active by the node's concurrency tracker meanwhile, so the job's
// later fires keep queueing behind it here.
func (e *Engine) waitBusy(l *lifecycle, f *Fire) {
	e.signals.fireBusy(f.Execution.ID)
	pf := requeued(f)
	pf.admitted = true
	go func() {
		if e.sleep(l.ctx, busyRetryDelay, nil) {
			l.fires.push(pf)
		}
	}()
}

func addIDs(set map[int64]bool, ids []int64) {
	for _, id := range ids {
		set[id] = true
	}
}
