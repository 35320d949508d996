package engine

import (
	"context"
	"fmt"

	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
)

// busyRetryDelay is how often a fire whose job runs on another node asks again whether it may
// start.
const busyRetryDelay = markRetryDelay

// claim is the outcome of one claim of fires.
type claim struct {
	won       map[int64]bool   // the fires this node may run
	busy      map[int64]bool   // fires left acquired: their job runs on another node
	discarded map[int64]string // won, to be recorded skipped for the reason given (see claimFires)
}

// runsAlone reports whether a job's fires must not run beside each other across the cluster:
// its overlap policy holds for the whole cluster and, for a remote job, for all its app's
// executor instances. Jobs that allow it pay nothing.
func runsAlone(job *store.Job) bool {
	return job.Concurrency != "" && job.Concurrency != store.ConcurrencyAllow
}

// countsEveryRun reports whether every running execution of the job counts against its fires,
// the claiming node's own included: a remote job's runs are its executors' once handed over,
// and the node's tracker forgets them then (their results may come back to any node), so only
// the database knows them all. An in-process job's own runs are the node's tracker's to count.
func countsEveryRun(job *store.Job) bool { return job.TargetKind == store.TargetRemote }

// claimFires wins fires with the acquired → running compare-and-set. The node's concurrency
// tracker has already kept this node's fires apart; the fires in alone are those of jobs
// whose overlap policy must also hold across nodes, claimed under their job's row lock
// (ExecutionsMarkRunningAlone, which counts an at_most job's runs against its limit). Of
// those, a fire whose job runs on another node is busy and stays acquired, except when its
// policy drops it: a skip job's, and, for the policies that keep only the newest waiting fire
// (buffer_one, cancel, terminate), one that a newer fire due by now waits behind. Those are
// claimed all the same, to be recorded skipped. Cancel and terminate also ask the other
// nodes to stop the job's runs.
func (e *Engine) claimFires(ctx context.Context, o store.Owner, plain []int64, alone []*Fire, limits map[int64]int, firedAt int64) (claim, error) {
	var every map[int64]bool
	for _, f := range alone {
		if countsEveryRun(f.Job) {
			if every == nil {
				every = map[int64]bool{}
			}
			every[f.Job.ID] = true
		}
	}
	c := claim{won: map[int64]bool{}, busy: map[int64]bool{}, discarded: map[int64]string{}}
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
	won, busy, err := e.store.ExecutionsMarkRunningAlone(ctx, o, ids, limits, every, firedAt)
	if err != nil {
		return c, err
	}
	addIDs(c.won, won)
	addIDs(c.busy, busy)
	var discard []int64
	why := map[int64]string{}
	replaced := map[int64]bool{}
	for _, f := range alone {
		id := f.Execution.ID
		if !c.busy[id] {
			continue
		}
		p := overlapOf(f.Job).Policy
		switch p {
		case jobrun.Skip:
			discard = append(discard, id)
			why[id] = "skipped: the previous fire of the job still runs on another node or executor (overlap policy skip)"
			continue
		case jobrun.Cancel, jobrun.Terminate:
			if !replaced[f.Job.ID] {
				replaced[f.Job.ID] = true
				e.replaceElsewhere(ctx, o, f.Job.ID, p)
			}
		case jobrun.BufferOne:
		default:
			continue
		}
		newer, err := e.newerWaiting(ctx, f.Execution, firedAt)
		if err != nil {
			e.log.Error("looking for a newer fire of the job", "job", f.Job.ID, "err", err)
			continue // it stays busy and asks again
		}
		if newer != 0 {
			discard = append(discard, id)
			why[id] = fmt.Sprintf("skipped: a newer fire (%d) waits for the job's running fire (overlap policy %s)", newer, p)
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
		for _, id := range won {
			c.discarded[id] = why[id]
		}
	}
	return c, nil
}

// atMostRoom returns, for the at_most jobs among the fires to claim alone, how many of their
// fires may run across the cluster besides this node's other active ones: the job's limit less
// the fires the node's tracker counts active that are not being claimed. The store counts the
// other nodes' runs against it. A remote job's limit is whole: the store counts all its runs
// (countsEveryRun), those this node is handing over too.
func (c *concurrency) atMostRoom(alone []*Fire) map[int64]int {
	claiming := map[int64]int{}
	limits := map[int64]int{}
	for _, f := range alone {
		if ov := overlapOf(f.Job); ov.Policy == jobrun.AtMost {
			limits[f.Job.ID] = ov.Limit()
			if !countsEveryRun(f.Job) {
				claiming[f.Job.ID]++
			}
		}
	}
	for job, n := range claiming {
		active, _ := c.t.Load(job)
		limits[job] -= max(active-n, 0)
	}
	return limits
}

// newerWaiting returns a fire of x's job, due by now and later than x, that waits to start
// (acquired by any node), or 0: the policies that keep only the newest waiting fire keep that
// one. Every node orders the waiting fires alike (scheduled time, then id), so of several
// waiting on several nodes each drops all but the newest without asking the others.
func (e *Engine) newerWaiting(ctx context.Context, x *store.Execution, now int64) (int64, error) {
	waiting, err := e.store.ExecutionList(ctx, store.ExecutionFilter{JobID: x.JobID, State: store.ExecAcquired, Limit: 1000})
	if err != nil {
		return 0, err
	}
	for _, w := range waiting {
		if w.ScheduledAt <= now && (w.ScheduledAt > x.ScheduledAt || w.ScheduledAt == x.ScheduledAt && w.ID > x.ID) {
			return w.ID, nil
		}
	}
	return 0, nil
}

// replaceElsewhere stops the job's runs that a cancel or terminate job's newer fire replaces
// and that this node's tracker does not hold: in-process runs on other nodes (a kill request
// each node reads while it runs handlers, Kill), and the runs handed to executors, this node's
// too, through the executor's kill (killRun). The fire stays busy, and is claimed when those
// runs have ended. A kill that fails is only logged: the fire asks again after
// busyRetryDelay, and a kill repeated is a no-op.
func (e *Engine) replaceElsewhere(ctx context.Context, o store.Owner, job int64, p jobrun.Policy) {
	running, err := e.store.ExecutionList(ctx, store.ExecutionFilter{JobID: job, State: store.ExecRunning})
	if err != nil {
		e.log.Error("listing the runs a replace fire replaces", "job", job, "err", err)
		return
	}
	for _, x := range running {
		if x.ExecutorAddress == "" && store.OwnerOf(x) == o {
			continue // this node's own run (or dispatch): its tracker canceled it
		}
		if err := e.killRun(ctx, x, fmt.Sprintf("replaced by a newer fire (overlap policy %s; the executor was not running it)", p)); err != nil {
			e.log.Error("stopping the run a replace fire replaces", "execution", x.ID, "node", x.Node, "executor", x.ExecutorAddress, "err", err)
			continue
		}
		e.log.Info("replacing a run elsewhere", "policy", p, "execution", x.ID, "node", x.Node, "executor", x.ExecutorAddress, "job", job)
	}
}

// waitBusy asks again, after busyRetryDelay, to start a fire whose job ran on another node or
// executor: a run's end is seen there whichever node wrote it (a remote run's result comes
// back to any node).
// The fire stays counted as active by the node's concurrency tracker meanwhile, so the job's
// later fires keep queueing behind it here.
func (e *Engine) waitBusy(l *lifecycle, f *Fire) {
	e.stats.Busy.Add(1)
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
