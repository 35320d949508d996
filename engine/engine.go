package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/store"
)

// Engine is one scheduler node. Create it with New, then Start and Stop it; it can be
// started again after Stop.
type Engine struct {
	cfg   Config
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	// remoteKill kills the executor runs of ended workflow runs (SetRemoteKiller).
	remoteKill atomic.Pointer[RemoteKiller]

	jobs *jobCache
	cals *calendarCache

	lifeMu  sync.Mutex // serialises Start, Stop and rejoining
	running bool
	life    *lifecycle // nil while running only between a rejoin that failed and its retry
	// waking is life, for Wake: a result written while Stop or a rejoin holds lifeMu (it
	// waits for the writer) wakes the acquirer, and must not wait for lifeMu itself.
	waking atomic.Pointer[lifecycle]
	// backfillAdded tells the acquisition loop that this node stored a backfill: look for
	// backfills in the next round, not a poll interval later.
	backfillAdded atomic.Bool
	// lastBeat is when (Unix ms, the node's clock) the last heartbeat that succeeded was sent,
	// 0 after one failed; seeing is when the heartbeats began to succeed without a gap of a
	// node timeout. See SeesDatabaseFor.
	lastBeat, seeing atomic.Int64
	// viewFrom is the database's time (Unix ms) of the first heartbeat of the node's present
	// unbroken view of the database: a node whose last beat is older may have been silent
	// only because the database was away (see RecoverDeadNodes).
	viewFrom atomic.Int64

	leadership *Leadership
	stats      Stats

	signals *testSignals // nil outside tests
}

// lifecycle is one life of the node: what one Start (or a rejoin) creates and the matching
// Stop (or the cluster declaring it dead) tears down.
type lifecycle struct {
	// owner is the life's identity in the cluster: the node id and this life's incarnation.
	owner store.Owner
	// fence tells whether the cluster still counts this life alive.
	fence  *fence
	ctx    context.Context // canceled when the loops must stop taking work
	cancel context.CancelFunc
	// runCtx is the parent of every handler's context; canceling it aborts running handlers
	// (at the end of the drain, or when the node is abandoned).
	runCtx    context.Context
	runCancel context.CancelFunc
	// claimCtx is the parent of every claim's context: a stop lets a claim in flight finish
	// within the drain's budget (its winners run in the drain), then cancels it.
	claimCtx    context.Context
	claimCancel context.CancelFunc
	// writeCtx bounds the result writer's retries: canceled when the stop's leave budget is
	// spent or the node is abandoned, so a database that does not answer cannot hold Stop.
	writeCtx    context.Context
	writeCancel context.CancelFunc
	loops       sync.WaitGroup // acquirer, firer, starter, cluster duties (not the completer)
	handlers    sync.WaitGroup // running handlers
	wake        chan struct{}  // pokes the acquirer
	fires       *fireQueue
	rounds      rounds              // the acquisition rounds' commits, for settling one whose answer was lost
	due         chan []*pendingFire // fires released by the firer, to be started
	completer   *completer
	conc        *concurrency
	slots       chan struct{} // MaxRunning tokens
	abandoned   atomic.Bool
}

// Stats are counters of what the node did since it was created.
type Stats struct {
	Acquired  atomic.Int64 // fires this node acquired
	Fired     atomic.Int64 // fires this node ran (won acquired → running)
	LostRaces atomic.Int64 // fires this node acquired but lost before running them
	Misfired  atomic.Int64 // triggers whose misfire policy this node applied
	Completed atomic.Int64 // results written
	Recovered atomic.Int64 // executions of dead nodes (or of its own earlier lives) this node recovered
	Rejoined  atomic.Int64 // times the cluster declared this node dead and it joined again
	// LostOnExecutor counts the runs handed to executors this node declared lost.
	LostOnExecutor atomic.Int64
	// LateResults counts results this node recorded for runs already declared lost.
	LateResults atomic.Int64
	// Busy counts the claims of fires left waiting because their job ran elsewhere (on
	// another node, or, for a remote job, on any of its executors): each retry counts.
	Busy atomic.Int64
	// Killed counts in-process runs this node canceled on a kill request.
	Killed atomic.Int64
	// QuotaDelayed counts fires started later than scheduled by their app's fire-rate quota.
	QuotaDelayed atomic.Int64
	// LateMs is how late (ms past its scheduled time) the first fire of the last batch the
	// node started was: under overload the node keeps firing, late, and says so here.
	LateMs atomic.Int64
}

// New validates cfg and returns a stopped engine.
func New(cfg Config) (*Engine, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: c, store: c.Store, clock: c.Clock, log: c.Logger.With("node", c.NodeID), leadership: newLeadership()}
	e.jobs = newJobCache(e.store, e.clock)
	e.cals = newCalendarCache(e.store)
	return e, nil
}

// SubtaskOwner names a node's life as the owner of the sub-tasks it runs.
func SubtaskOwner(o store.Owner) string { return o.Node + "/" + o.Incarnation }

// SubtaskOwner is the owner the node's current life claims sub-tasks as, and false while it
// has none (stopped, or declared dead and not joined again).
func (e *Engine) SubtaskOwner() (string, bool) {
	l := e.waking.Load()
	if l == nil {
		return "", false
	}
	return SubtaskOwner(l.owner), true
}

// NodeID returns the node's name in the cluster.
func (e *Engine) NodeID() string { return e.cfg.NodeID }

// NodeTimeout returns how long a node may miss heartbeats before the cluster counts it dead.
func (e *Engine) NodeTimeout() time.Duration { return e.cfg.NodeTimeout }

// Stats returns the node's counters.
func (e *Engine) Stats() *Stats { return &e.stats }

// IsLeader reports whether the node holds the leader lease.
func (e *Engine) IsLeader() bool { return e.leadership.IsLeader() }

// HeartbeatAge is how long ago the node sent its last heartbeat that succeeded, and false
// when it has none (stopped, or the last one failed).
func (e *Engine) HeartbeatAge() (time.Duration, bool) {
	last := e.lastBeat.Load()
	if last == 0 {
		return 0, false
	}
	return e.clock.Now().Sub(time.UnixMilli(last)), true
}

// Backlog is how many acquired fires the node holds in memory, not yet started.
func (e *Engine) Backlog() int {
	l := e.waking.Load()
	if l == nil {
		return 0
	}
	return l.fires.heldNow()
}

// HeartbeatInterval is how often the node heartbeats; the leader's duties keep its pace.
func (e *Engine) HeartbeatInterval() time.Duration { return e.cfg.HeartbeatInterval }

// Leadership returns the node's role in the leader election, to listen for its changes.
func (e *Engine) Leadership() *Leadership { return e.leadership }

// Start registers the node as a new life (incarnation), recovers what its earlier lives
// under the same node id left behind, and starts its loops. It returns once the node is
// running.
func (e *Engine) Start(ctx context.Context) error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if e.running {
		return errors.New("engine: already started")
	}
	if err := e.startLife(ctx); err != nil {
		return err
	}
	e.running = true
	e.log.Info("engine started", "incarnation", e.life.owner.Incarnation)
	return nil
}

// startLife begins a new life of the node. Its earlier lives' work is recovered before the
// new life acquires anything: a node restarted under the same id (a supervisor, a
// StatefulSet) must not strand what it held when it died, and nobody else would recover it,
// since the new life keeps the node row alive. Called with lifeMu held.
func (e *Engine) startLife(ctx context.Context) error {
	owner := store.Owner{Node: e.cfg.NodeID, Incarnation: newIncarnation()}
	f := newFence()
	sent := e.clock.Now()
	n, err := e.store.NodeRegister(ctx, owner, nodeName())
	if err != nil {
		return fmt.Errorf("engine: register node %s: %w", e.cfg.NodeID, err)
	}
	f.renew(sent.Add(e.cfg.NodeTimeout))
	e.beat(sent, e.clock.Now(), n.LastSeen)
	if err := e.recoverEarlierLives(ctx, owner); err != nil {
		// The row stays, silent: the leader recovers this life and the earlier ones' work
		// stays stranded only until the node starts again.
		return fmt.Errorf("engine: recover the earlier lives of node %s: %w", e.cfg.NodeID, err)
	}
	l := &lifecycle{owner: owner, fence: f, wake: make(chan struct{}, 1), slots: make(chan struct{}, e.cfg.MaxRunning),
		due: make(chan []*pendingFire, 1024)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.runCtx, l.runCancel = context.WithCancel(context.Background())
	l.claimCtx, l.claimCancel = context.WithCancel(context.Background())
	l.writeCtx, l.writeCancel = context.WithCancel(context.Background())
	l.fires = newFireQueue(e.cfg.MaxHeld)
	l.conc = newConcurrency()
	l.completer = newCompleter(e, l)
	e.life = l
	e.waking.Store(l)

	go l.completer.run()
	l.loops.Add(4 + e.cfg.Acquirers)
	for range e.cfg.Acquirers {
		go func() { defer l.loops.Done(); e.acquireLoop(l) }()
	}
	go func() { defer l.loops.Done(); e.fireLoop(l) }()
	go func() { defer l.loops.Done(); e.startLoop(l) }()
	go func() { defer l.loops.Done(); e.clusterLoop(l) }()
	go func() { defer l.loops.Done(); e.killLoop(l) }()
	return nil
}

// Stop stops acquiring, hands the fires this node acquired but did not start back to the
// cluster, waits up to DrainTimeout (or ctx) for running handlers, writes their results and
// leaves the cluster. Writing the results and leaving take at most LeaveTimeout together,
// whatever ctx says and whether or not the database answers, so Stop returns within
// DrainTimeout + LeaveTimeout of handlers that end when canceled. It is idempotent.
//
// A claim (acquired → running) in flight when Stop begins is not cut short, since a
// statement canceled after the database applied it would leave runs that no handler runs:
// it has the drain's budget (DrainTimeout, or until ctx ends) to answer, and its winners run
// in the drain. A claim still unanswered then is canceled, and its fires are recorded
// canceled if the database applied it (the result write is a compare-and-set from running
// under this life), or released with the node's other acquired fires if it did not.
func (e *Engine) Stop(ctx context.Context) error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if !e.running {
		return nil
	}
	l := e.life
	e.running, e.life = false, nil
	e.waking.Store(nil)
	if l == nil {
		return nil // declared dead, and not joined again: nothing of the dead life is ours
	}

	// No new work: the loops end before the drain, so no handler starts after it began. The
	// drain's budget starts now: a claim in flight spends it too.
	l.cancel()
	drainTimer := e.clock.NewTimer(e.cfg.DrainTimeout)
	defer drainTimer.Stop()
	spent := false
	within := func(done <-chan struct{}) {
		if spent {
			return
		}
		select {
		case <-done:
			return
		case <-drainTimer.C():
			e.log.Warn("drain timeout: canceling claims and running handlers")
		case <-ctx.Done():
			e.log.Warn("stop canceled: canceling claims and running handlers")
		}
		spent = true
	}
	loopsDone := make(chan struct{})
	go func() { l.loops.Wait(); close(loopsDone) }()
	within(loopsDone)
	l.claimCancel()
	<-loopsDone
	l.fires.close()
	l.conc.dropQueued()
	drained := make(chan struct{})
	go func() { l.handlers.Wait(); close(drained) }()
	within(drained)
	l.runCancel()
	<-drained

	// Leaving has its own budget: the caller's ctx may have ended with the drain, and the
	// results, the fires, the lease and the node row must still be written back.
	leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.LeaveTimeout)
	defer cancel()
	stopWriting := context.AfterFunc(leaveCtx, l.writeCancel)
	l.completer.close()
	stopWriting()
	l.writeCancel()

	// The fires still acquired by this node go back to pending so another node (or this
	// one, restarted) fires them; the node row goes so nobody waits for it to time out.
	// Each step is retried within the leave budget: MySQL answers a deadlock when the release
	// meets another node's acquisition on the same index range, and a step given up is left
	// to the leader's recovery, a node timeout later.
	var errs []error
	leave := func(what string, step func(ctx context.Context) error) {
		if err := backoff.Retry(leaveCtx, e.clock, leaveRetry, leaveAttempts, step); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	leave("release acquired fires", func(ctx context.Context) error {
		_, err := e.store.ExecutionsReleaseAcquired(ctx, l.owner)
		return err
	})
	if e.leadership.set(false, e.clock.Now()) {
		leave("release leader lease", func(ctx context.Context) error {
			_, err := e.store.LeaseRelease(ctx, leaderLease, e.cfg.NodeID)
			return err
		})
	}
	leave("leave cluster", func(ctx context.Context) error {
		if err := e.store.NodeDelete(ctx, l.owner); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	})
	err := errors.Join(errs...)
	if err != nil {
		e.log.Error("engine stopped without leaving cleanly; the leader recovers the rest", "err", err)
	} else {
		e.log.Info("engine stopped")
	}
	return err
}

// leaveRetry and leaveAttempts pace the retries of Stop's last writes, all within LeaveTimeout.
var leaveRetry = backoff.Policy{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: 0.5}

const leaveAttempts = 5

// abandon stops the node the way a crash does: its loops end, its handlers are canceled and
// nothing is written back — no results, no release of acquired fires, no goodbye. Tests use
// it to prove that the rest of the cluster recovers the node's work.
func (e *Engine) abandon() {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if !e.running {
		return
	}
	l := e.life
	e.running, e.life = false, nil
	e.waking.Store(nil)
	if l != nil {
		e.drop(l)
	}
}

// drop ends a life without writing anything back: its loops end, the fires it holds in
// memory are forgotten and its handlers are canceled. Called with lifeMu held.
func (e *Engine) drop(l *lifecycle) {
	l.abandoned.Store(true)
	l.writeCancel()
	l.cancel()
	l.claimCancel()
	l.loops.Wait()
	l.fires.close()
	l.conc.dropQueued()
	l.runCancel()
	l.handlers.Wait()
	l.completer.close()
	e.leadership.set(false, e.clock.Now())
	e.lastBeat.Store(0)
}

// rejoin ends the life l, which the cluster declared dead (its heartbeat found its node row
// gone), and starts a new one. The dead life's acquired fires were handed to other nodes and
// its runs declared lost (and re-fired where the job asks for recovery), so it drops
// everything it holds in memory — held fires, queued serial fires — and cancels its
// in-process runs rather than run any of them a second time.
func (e *Engine) rejoin(l *lifecycle) {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if e.life != l {
		return // stopped meanwhile
	}
	e.log.Warn("the cluster declared this node dead: dropping what it held and joining as a new life",
		"incarnation", l.owner.Incarnation)
	e.life = nil
	e.waking.Store(nil)
	e.drop(l)
	e.stats.Rejoined.Add(1)
	e.joinAgain()
}

// joinAgain starts a new life, retrying every heartbeat interval while the node should run
// and the database refuses. Called with lifeMu held.
func (e *Engine) joinAgain() {
	if !e.running || e.life != nil {
		return
	}
	err := e.startLife(context.Background())
	if err == nil {
		e.log.Info("joined the cluster again", "incarnation", e.life.owner.Incarnation)
		e.signals.nodeRejoined(e.life.owner)
		return
	}
	e.log.Error("joining the cluster again failed; retrying", "err", err)
	go func() {
		<-e.clock.NewTimer(e.cfg.HeartbeatInterval).C()
		e.lifeMu.Lock()
		defer e.lifeMu.Unlock()
		e.joinAgain()
	}()
}

// JobChanged drops the job from the node's short-lived job cache, so that the node's next
// fire of it runs the job as just saved here: a script saved and run at once runs the new
// script, matching the version its execution is stamped with. Other nodes see an edit
// within the cache's second.
func (e *Engine) JobChanged(id int64) { e.jobs.forget(id) }

// Wake makes the acquirer look for due work now, e.g. after a trigger was added that is due
// sooner than the next poll.
func (e *Engine) Wake() {
	if l := e.waking.Load(); l != nil {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// sleep waits for d on the engine's clock, or until wake or ctx fires. It reports false when
// ctx is done.
func (e *Engine) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	return e.wait(ctx, e.clock.NewTimer(d), wake)
}

// sleepUntil is sleep until the instant t.
func (e *Engine) sleepUntil(ctx context.Context, t time.Time, wake <-chan struct{}) bool {
	return e.wait(ctx, e.clock.NewTimerAt(t), wake)
}

func (e *Engine) wait(ctx context.Context, t clock.Timer, wake <-chan struct{}) bool {
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	case <-wake:
	}
	return true
}

// newIncarnation returns a random name for one life of the node.
func newIncarnation() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func defaultNodeID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", nodeName(), os.Getpid(), hex.EncodeToString(b))
}

func nodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
