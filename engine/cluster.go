package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// leaderLease is the lease whose holder runs the cluster's single-runner duties.
const leaderLease = "leader"

// clusterLoop heartbeats and contends for the leader lease; the node's Leadership tells the
// leader's duties (package maintenance) when to run. Every check uses the database's clock,
// so a node whose own clock is off can neither look dead nor keep a dead peer alive.
func (e *Engine) clusterLoop(l *lifecycle) {
	for {
		if dead := e.clusterTick(l); dead {
			go e.rejoin(l) // it ends this loop, and waits for it
			return
		}
		if !e.pause(l) {
			return
		}
	}
}

// pause waits one heartbeat interval, or reports false when the life ends first. A
// resignation asked for meanwhile (Leadership.Resign) is carried out at once, and the wait
// starts again: the node contends for the lease a whole heartbeat after giving it up.
func (e *Engine) pause(l *lifecycle) bool {
	for {
		t := e.clock.NewTimer(e.cfg.HeartbeatInterval)
		select {
		case <-l.ctx.Done():
			t.Stop()
			return false
		case <-t.C():
			return true
		case term := <-e.leadership.resign:
			t.Stop()
			if e.leadership.stepDown(term, e.clock.Now()) {
				e.log.Warn("resigned leadership: a leader duty could not start", "term", term)
				if _, err := e.store.LeaseRelease(l.ctx, leaderLease, e.cfg.NodeID); err != nil && l.ctx.Err() == nil {
					e.log.Error("release the leader lease on resigning; it expires by itself", "err", err)
				}
			}
		}
	}
}

// clusterTick heartbeats and, when the life still lives, takes its turn at the leader lease.
// It reports dead when the heartbeat found the life's node row gone: the cluster declared
// this life dead.
func (e *Engine) clusterTick(l *lifecycle) (dead bool) {
	ctx := l.ctx
	sent := e.clock.Now()
	n, err := e.store.NodeHeartbeat(ctx, l.owner, nodeName())
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return true
		}
		if ctx.Err() == nil {
			e.log.Error("heartbeat failed", "err", err)
		}
		// Cut off from the database, the node cannot renew the leader lease: it steps down
		// rather than run the leader's duties on a lease that may have passed to another node.
		e.lastBeat.Store(0)
		if e.leadership.set(false, e.clock.Now()) {
			e.log.Info("leadership changed", "leader", false)
		}
		return false
	}
	l.fence.renew(sent.Add(e.cfg.NodeTimeout))
	e.beat(sent, n.LastSeen)
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
	return false
}

// RecoverDeadNodes returns the work of every node that missed its heartbeats to the cluster:
// its acquired fires become pending again, its running executions become lost, and those of
// jobs that request recovery are fired again with cause recovery at their original scheduled
// time. Each move is a compare-and-set on the dead node's life (its id and incarnation), so a
// node that wakes up late finds nothing left to run. It is a leader's duty
// (maintenance.NodeRecovery runs it).
//
// A node declares others dead only once its own heartbeats have succeeded for a whole node
// timeout without a gap. After an outage of the database, or of the network to it, every
// node's row is stale: the first node back would otherwise declare all the others dead before
// their own next heartbeat, and lose every run of the cluster. Waiting one node timeout lets
// the living beat; only the dead stay silent.
//
// A node that has not beaten since this node's view began gets the outage grace
// (JudgeSilence): declaring dead a node busy catching up after the heal runs twice every run
// whose success waited in its result batch (the runs are recovered; the success is refused).
func (e *Engine) RecoverDeadNodes(ctx context.Context) error {
	judge, from := e.JudgeSilence(e.cfg.NodeTimeout)
	if !judge {
		return nil
	}
	stale, err := e.store.NodesStale(ctx, e.cfg.NodeTimeout)
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.ID == e.cfg.NodeID || n.LastSeen < from {
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

// beat records a heartbeat sent at sent that succeeded, recorded at dbAt by the database's
// clock. A gap of more than a node timeout since the previous one (or a failure between them)
// starts the node's view of the cluster anew.
func (e *Engine) beat(sent time.Time, dbAt int64) {
	at := sent.UnixMilli()
	if prev := e.lastBeat.Load(); prev == 0 || at-prev > e.cfg.NodeTimeout.Milliseconds() {
		e.viewFrom.Store(dbAt)
		e.seeing.Store(at)
	}
	e.lastBeat.Store(at)
}

// seesCluster reports whether the node has seen the database without a gap for a node timeout
// and sees it now: a heartbeat that hangs through an outage neither fails nor succeeds, so
// the last success must be recent too.
func (e *Engine) seesCluster() bool { return e.SeesDatabaseFor(e.cfg.NodeTimeout) }

// JudgeSilence tells a leader duty that judges peers (nodes, executors) gone after a silence
// longer than silence whether it may judge now, and whom: nobody until this node has seen the
// database without a gap for silence (while it could not reach the database, nobody's beats
// could be written and their silence says nothing); then the peers whose last beat is at or
// after from, by the database's clock.
//
// A peer that has not beaten since this node's view began gets outageGraceBeats of this
// node's heartbeats more before from drops to 0: after an outage, a peer busy catching up,
// its connections opened again and its beat queued behind the backlog (or written by a node
// that is), may take longer than silence to beat, and judging it gone then runs twice every
// run it holds. One that beat since and fell silent again is judged by silence alone. The
// grace is bounded, so a peer that died during the outage is still judged.
func (e *Engine) JudgeSilence(silence time.Duration) (judge bool, from int64) {
	if !e.SeesDatabaseFor(silence) {
		return false, 0
	}
	if e.SeesDatabaseFor(silence + outageGraceBeats*e.cfg.HeartbeatInterval) {
		return true, 0
	}
	return true, e.viewFrom.Load()
}

// SeesDatabaseFor reports whether the node's heartbeats have succeeded without a failure or
// a gap for at least d, up to now. A leader duty that judges others by their silence asks
// it first: while the node itself could not reach the database, nobody else's heartbeats
// could be written either, and their silence says nothing.
func (e *Engine) SeesDatabaseFor(d time.Duration) bool {
	now, timeout := e.clock.Now().UnixMilli(), e.cfg.NodeTimeout.Milliseconds()
	last := e.lastBeat.Load()
	return last != 0 && now-last < timeout && now-e.seeing.Load() >= d.Milliseconds()
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
	released, err := tx.ExecutionsReleaseAcquired(ctx, o)
	if err != nil {
		return false, err
	}
	lost, err := tx.ExecutionsLoseRunning(ctx, o)
	if err != nil {
		return false, err
	}
	// The dead life's sub-tasks go back to pending for any runner, and the maps it was
	// reducing to waiting: a result it sends late is refused by the compare-and-set.
	if _, err := tx.SubtasksRelease(ctx, []string{SubtaskOwner(o)}); err != nil {
		return false, err
	}
	out, ended, err := e.continueLost(ctx, tx, lost, lostWithNode)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	e.workflowRunsEnded(ctx, ended)
	e.stats.Recovered.Add(released + int64(len(lost)))
	e.signals.nodeRecovered(o.Node)
	e.log.Warn("recovered a dead node", "dead", o.Node, "incarnation", o.Incarnation, "released", released, "lost", out.Lost, "refired", out.FollowUp)
	return released > 0 || out.FollowUp > 0, nil
}

// outageGrace is how long a node must have seen the database without a gap before it
// declares dead a node that has not beaten since the gap began (JudgeSilence for the node
// timeout): 18 s with the default 2 s heartbeat.
func (e *Engine) outageGrace() time.Duration {
	return e.cfg.NodeTimeout + outageGraceBeats*e.cfg.HeartbeatInterval
}

// outageGraceBeats is the grace JudgeSilence gives, after an outage, to a peer that has not
// beaten since, in this node's heartbeats.
const outageGraceBeats = 6
