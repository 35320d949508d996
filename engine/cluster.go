package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// leaderLease is the lease whose holder runs the cluster's single-runner duties.
const leaderLease = "leader"

// leadership is the node's state in the leader election.
type leadership int

const (
	follower leadership = iota
	leader
)

func (s leadership) String() string {
	if s == leader {
		return "leader"
	}
	return "follower"
}

// clusterLoop heartbeats, contends for the leader lease and, while leader, recovers the work
// of dead nodes. Every check uses the database's clock, so a node whose own clock is off can
// neither look dead nor keep a dead peer alive.
func (e *Engine) clusterLoop(l *lifecycle) {
	state := follower
	for {
		var dead bool
		state, dead = e.clusterTick(l, state)
		if dead {
			go e.rejoin(l) // it ends this loop, and waits for it
			return
		}
		if !e.sleep(l.ctx, e.cfg.HeartbeatInterval, nil) {
			return
		}
	}
}

// clusterTick heartbeats and, when the node still lives, takes its turn at leadership. It
// reports dead when the heartbeat found the node's row gone: the cluster declared this life
// dead.
func (e *Engine) clusterTick(l *lifecycle, state leadership) (leadership, bool) {
	ctx := l.ctx
	sent := e.clock.Now()
	if _, err := e.store.NodeHeartbeat(ctx, l.owner, nodeName()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return follower, true
		}
		if ctx.Err() == nil {
			e.log.Error("heartbeat failed", "err", err)
		}
		return state, false
	}
	l.fence.renew(sent.Add(e.cfg.NodeTimeout))
	next := follower
	_, held, err := e.store.LeaseAcquire(ctx, leaderLease, e.cfg.NodeID, e.cfg.NodeTimeout)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			e.log.Error("leader lease", "err", err)
		}
		// Without an answer the node cannot know it still leads: it steps down.
	case held:
		next = leader
	}
	if next != state {
		e.log.Info("leadership changed", "from", state, "to", next)
	}
	e.leader.Store(next == leader)
	if next == leader {
		if err := e.recoverDeadNodes(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("recovering dead nodes", "err", err)
		}
	}
	return next, false
}

// recoverDeadNodes returns the work of every node that missed its heartbeats to the cluster:
// its acquired fires become pending again, its running executions become lost, and those of
// jobs that request recovery are fired again with cause recovery at their original scheduled
// time. Each move is a compare-and-set on the dead node's life (its id and incarnation), so a
// node that wakes up late finds nothing left to run.
func (e *Engine) recoverDeadNodes(ctx context.Context) error {
	stale, err := e.store.NodesStale(ctx, e.cfg.NodeTimeout)
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.ID == e.cfg.NodeID {
			continue
		}
		handedBack, err := e.recoverLife(ctx, n.Owner(), true)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.ID, err)
		}
		if handedBack {
			e.Wake()
		}
	}
	return nil
}

// recoverLife recovers the work of the life o in one transaction. With declare, o is a node
// the leader found silent: it is declared dead (its row deleted) only if it is still silent,
// so a node that beat meanwhile keeps its work; without, o is an earlier life of this node.
// It reports whether fires went back to pending, for the acquirer to take.
func (e *Engine) recoverLife(ctx context.Context, o store.Owner, declare bool) (bool, error) {
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if declare {
		// First, so that its lock on the row orders it with the node's own heartbeat and
		// acquisitions (NodeHold).
		dead, err := tx.NodeDeleteStale(ctx, o, e.cfg.NodeTimeout)
		if err != nil || !dead {
			return false, err
		}
	}
	released, lost, refired, err := e.takeBack(ctx, tx, o)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	e.stats.Recovered.Add(released + int64(lost))
	e.signals.nodeRecovered(o.Node)
	e.log.Warn("recovered a dead node", "dead", o.Node, "incarnation", o.Incarnation, "released", released, "lost", lost, "refired", refired)
	return released > 0 || refired > 0, nil
}

// takeBack hands the work of a dead life back to the cluster in tx: its acquired fires become
// pending again, its runs become lost, and those of jobs that request recovery are fired
// again with cause recovery at their original scheduled time.
func (e *Engine) takeBack(ctx context.Context, tx store.Tx, o store.Owner) (released int64, lost, refired int, err error) {
	released, err = tx.ExecutionsReleaseAcquired(ctx, o)
	if err != nil {
		return 0, 0, 0, err
	}
	runs, err := tx.ExecutionsLoseRunning(ctx, o)
	if err != nil {
		return 0, 0, 0, err
	}
	jobIDs := make([]int64, len(runs))
	for i, ex := range runs {
		jobIDs[i] = ex.JobID
	}
	js, err := tx.JobsGet(ctx, jobIDs)
	if err != nil {
		return 0, 0, 0, err
	}
	jobs := make(map[int64]*store.Job, len(js))
	for _, j := range js {
		jobs[j.ID] = j
	}
	var refire []*store.Execution
	var alarmed []int64
	for _, ex := range runs {
		job := jobs[ex.JobID]
		if job == nil {
			continue // the job is gone: nothing to re-run, nobody to tell
		}
		switch {
		case job.RequestsRecovery:
			refire = append(refire, &store.Execution{JobID: ex.JobID, TriggerID: ex.TriggerID,
				ScheduledAt: ex.ScheduledAt, Cause: store.CauseRecovery, Attempt: ex.Attempt + 1,
				State: store.ExecPending, ShardIndex: ex.ShardIndex, ShardTotal: ex.ShardTotal})
		case len(job.AlarmTargets) > 0:
			alarmed = append(alarmed, ex.ID) // the loss is final: tell the job's targets
		}
	}
	if len(alarmed) > 0 {
		if _, err := tx.ExecutionsSetAlarm(ctx, alarmed, store.AlarmNone, store.AlarmPending); err != nil {
			return 0, 0, 0, err
		}
	}
	if len(refire) > 0 {
		if _, err := tx.ExecutionsInsert(ctx, refire); err != nil {
			return 0, 0, 0, err
		}
	}
	return released, len(runs), len(refire), nil
}
