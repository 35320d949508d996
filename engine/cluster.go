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
	e.beat(sent, e.clock.Now(), n.LastSeen)
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
	j, ok := e.JudgeSilence(e.cfg.NodeTimeout, e.cfg.HeartbeatInterval)
	if !ok {
		return nil
	}
	stale, err := e.store.NodesStale(ctx, e.cfg.NodeTimeout)
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.ID == e.cfg.NodeID || n.LastSeen < j.From {
			continue
		}
		handedBack, err := e.recoverLife(ctx, n.Owner(), &j)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.ID, err)
		}
		if handedBack {
			e.Wake()
		}
	}
	return nil
}

// beat records a heartbeat sent at sent that succeeded at done, recorded at dbAt by the
// database's clock. The view of the cluster starts anew after a failure, after a gap between
// beats long enough to hide an outage in a peer's silence (beatGap), and after a beat that
// took long (slowBeat): a beat held by the network through an outage and answered after it
// would otherwise join the two sides of the outage into one unbroken view.
func (e *Engine) beat(sent, done time.Time, dbAt int64) {
	at := sent.UnixMilli()
	prev := e.lastBeat.Load()
	if prev == 0 || at-prev > e.beatGap().Milliseconds() || done.Sub(sent) > e.slowBeat() {
		e.viewFrom.Store(dbAt)
		e.seeing.Store(done.UnixMilli())
	}
	e.lastBeat.Store(at)
}

// beatGap is the longest gap between two heartbeats that keeps the node's view unbroken: a
// peer beating every heartbeat interval stays silent for less than a node timeout through
// an outage hidden in a shorter gap. Never under onTime.
func (e *Engine) beatGap() time.Duration {
	return max(e.cfg.NodeTimeout-e.cfg.HeartbeatInterval, e.onTime())
}

// onTime is the longest gap between two heartbeats that are on time: one interval, and
// half of one for the first beat's own way to the database.
func (e *Engine) onTime() time.Duration { return e.cfg.HeartbeatInterval * 3 / 2 }

// slowBeat is the longest a heartbeat may take and still show that the database was
// reachable while it was under way.
func (e *Engine) slowBeat() time.Duration { return e.cfg.HeartbeatInterval / 2 }

// A Judgment lets a leader duty judge peers (nodes, executors) gone after a silence. The
// database compares their last beat with its own clock, in a statement of the duty's
// transaction, and its answer stands only if the database was reachable, for the peers as
// for this node, through the silence before the moment the statement ran. A statement sent
// just before an outage can be held by the network through it and run after it, when every
// peer is silent because nobody could write a beat: Holds, asked once the statement has
// answered and before the transaction commits, refuses such an answer.
type Judgment struct {
	// From is the earliest last beat, by the database's clock (Unix ms), that may be judged;
	// 0 for all (see JudgeSilence).
	From int64

	e      *Engine
	seeing int64
	within time.Duration
}

// JudgeSilence tells a leader duty that judges gone the peers silent for longer than
// silence, each beating every peerBeat, whether it may judge now, and whom: nobody until
// this node has seen the database without a gap for silence (while it could not reach the
// database, nobody's beats could be written and their silence says nothing); then the peers
// whose last beat is at or after Judgment.From.
//
// A peer that has not beaten since this node's view began gets outageGraceBeats of this
// node's heartbeats more before From drops to 0: after an outage, a peer busy catching up,
// its connections opened again and its beat queued behind the backlog (or written by a node
// that is), may take longer than silence to beat, and judging it gone then runs twice every
// run it holds. One that beat since and fell silent again is judged by silence alone. The
// grace is bounded, so a peer that died during the outage is still judged.
func (e *Engine) JudgeSilence(silence, peerBeat time.Duration) (Judgment, bool) {
	// An outage that began right after this node's last beat leaves a peer silent since up
	// to one of its beats earlier. The database's answer stands while that silence cannot
	// have reached silence: within this long of this node's last beat, keeping a quarter of
	// the peer's beat for its beat's own way to the database. Never shorter than this node's
	// beats on time are apart, or the duty could never judge.
	within := max(silence-peerBeat-peerBeat/4, e.onTime())
	j := Judgment{e: e, seeing: e.seeing.Load(), within: within}
	if !e.SeesDatabaseFor(silence) || !j.Holds() {
		return Judgment{}, false
	}
	if !e.SeesDatabaseFor(silence + outageGraceBeats*e.cfg.HeartbeatInterval) {
		j.From = e.viewFrom.Load()
	}
	return j, true
}

// Holds reports whether an answer the database gave since the judgment was taken, and that
// this node has received, stands: the node's view has not started anew since, and its last
// heartbeat is recent enough that the database was reachable when the answer was made.
func (j *Judgment) Holds() bool {
	last := j.e.lastBeat.Load()
	return last != 0 && j.e.seeing.Load() == j.seeing && j.e.clock.Now().UnixMilli()-last <= j.within.Milliseconds()
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

// recoverLife recovers the work of the life o in one transaction. With declared, o is a node
// the leader found silent: it is declared dead (its row deleted) only if it is still silent,
// so a node that beat meanwhile keeps its work, and if the judgment holds when the database
// has answered; without, o is an earlier life of this node.
// It reports whether fires went back to pending, for the acquirer to take.
func (e *Engine) recoverLife(ctx context.Context, o store.Owner, declared *Judgment) (bool, error) {
	tx, err := e.store.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if declared != nil {
		// First, so that its lock on the row orders it with the node's own heartbeat and
		// acquisitions (NodeHold).
		dead, err := tx.NodeDeleteStale(ctx, o, e.cfg.NodeTimeout)
		if err != nil || !dead {
			return false, err
		}
		if !declared.Holds() {
			e.log.Warn("not declaring a node dead: the database judged it at a time this node may not have reached it", "node", o.Node, "incarnation", o.Incarnation)
			return false, nil
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
