package engine

import (
	"context"
	"fmt"
)

// leaderLease is the lease whose holder runs the cluster's single-runner duties.
const leaderLease = "leader"

// clusterLoop heartbeats and contends for the leader lease; the node's Leadership tells the
// leader's duties (package maintenance) when to run. Every check uses the database's clock,
// so a node whose own clock is off can neither look dead nor keep a dead peer alive.
func (e *Engine) clusterLoop(l *lifecycle) {
	for {
		e.clusterTick(l.ctx)
		if !e.sleep(l.ctx, e.cfg.HeartbeatInterval, nil) {
			return
		}
	}
}

func (e *Engine) clusterTick(ctx context.Context) {
	if _, err := e.store.NodeHeartbeat(ctx, e.cfg.NodeID, nodeName()); err != nil {
		if ctx.Err() == nil {
			e.log.Error("heartbeat failed", "err", err)
		}
		return
	}
	lead := false
	_, held, err := e.store.LeaseAcquire(ctx, leaderLease, e.cfg.NodeID, e.cfg.NodeTimeout)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			e.log.Error("leader lease", "err", err)
		}
		// Without an answer the node cannot know it still leads: it steps down.
	case held:
		lead = true
	}
	if e.leadership.set(lead, e.clock.Now()) {
		e.log.Info("leadership changed", "leader", lead)
	}
}

// RecoverDeadNodes returns the work of every node that missed its heartbeats to the cluster:
// its acquired fires become pending again, its running executions become lost, and those of
// jobs that request recovery are fired again with cause recovery at their original scheduled
// time. Each move is a compare-and-set on the dead node's name, so a node that wakes up late
// finds nothing left to run. It is a leader's duty (maintenance.NodeRecovery runs it).
func (e *Engine) RecoverDeadNodes(ctx context.Context) error {
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
