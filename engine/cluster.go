package engine

import (
	"context"
	"fmt"
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
		state = e.clusterTick(l.ctx, state)
		if !e.sleep(l.ctx, e.cfg.HeartbeatInterval, nil) {
			return
		}
	}
}

func (e *Engine) clusterTick(ctx context.Context, state leadership) leadership {
	if _, err := e.store.NodeHeartbeat(ctx, e.cfg.NodeID, nodeName()); err != nil {
		if ctx.Err() == nil {
			e.log.Error("heartbeat failed", "err", err)
		}
		return state
	}
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
	return next
}

// recoverDeadNodes returns the work of every node that missed its heartbeats to the cluster:
// its acquired fires become pending again, its running executions become lost, and those of
// jobs that request recovery are fired again with cause recovery at their original scheduled
// time. Each move is a compare-and-set on the dead node's name, so a node that wakes up late
// finds nothing left to run.
func (e *Engine) recoverDeadNodes(ctx context.Context) error {
	stale, err := e.store.NodesStale(ctx, e.cfg.NodeTimeout)
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.ID == e.cfg.NodeID {
			continue
		}
		if err := e.recoverNode(ctx, n.ID); err != nil {
			return fmt.Errorf("node %s: %w", n.ID, err)
		}
	}
	return nil
}

func (e *Engine) recoverNode(ctx context.Context, node string) error {
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	released, err := tx.ExecutionsReleaseAcquired(ctx, node)
	if err != nil {
		return err
	}
	lost, err := tx.ExecutionsLoseRunning(ctx, node)
	if err != nil {
		return err
	}
	out, err := e.continueLost(ctx, tx, lost, lostWithNode)
	if err != nil {
		return err
	}
	if err := tx.NodeDelete(ctx, node); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	e.stats.Recovered.Add(released + int64(len(lost)))
	e.signals.nodeRecovered(node)
	e.log.Warn("recovered a dead node", "dead", node, "released", released, "lost", out.Lost, "refired", out.FollowUp)
	if released > 0 || out.FollowUp > 0 {
		e.Wake()
	}
	return nil
}
