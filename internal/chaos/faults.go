package chaos

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// step is one fault of the plan, started at offset At from the load's start; steps run one
// after another, so a step that overruns delays the next.
type step struct {
	At time.Duration
	Do func(ctx context.Context)
}

// plan returns the fault plan. The short one injects every fault kind once (node kills with
// a restart under the same id and under a new one, a freeze past the node timeout, executor
// restarts on the same address, a database restart, a network cut); the long one repeats a
// two-minute cycle of them, with 30 s cuts, until the load ends.
func (c *cluster) plan() []step {
	nodeTimeout := 3 * c.o.Heartbeat
	freeze := nodeTimeout + 2*c.o.Heartbeat + 2*time.Second
	if c.o.Failover {
		return []step{{12 * time.Second, c.failover}}
	}
	if !c.o.Long {
		cut := 10 * time.Second
		return []step{
			{5 * time.Second, func(ctx context.Context) { c.killNode(ctx, 0, false, 3*time.Second) }},
			{12 * time.Second, func(ctx context.Context) { c.killNode(ctx, 1, true, 3*time.Second) }},
			{18 * time.Second, func(ctx context.Context) { c.freezeNode(2, freeze) }},
			{31 * time.Second, func(ctx context.Context) { c.restartExecutor(ctx, 0, 2*time.Second) }},
			{36 * time.Second, func(ctx context.Context) { c.restartDB(ctx, 3*time.Second) }},
			{45 * time.Second, func(ctx context.Context) { c.cut(cut) }},
			{58 * time.Second, func(ctx context.Context) { c.killNode(ctx, 2, false, 2*time.Second) }},
			{62 * time.Second, func(ctx context.Context) { c.restartExecutor(ctx, 1, 2*time.Second) }},
		}
	}
	var steps []step
	for base, n := 5*time.Second, 0; base < c.o.Load; base, n = base+120*time.Second, n+1 {
		node := func(k int) int { return (n + k) % 3 }
		steps = append(steps,
			step{base, func(ctx context.Context) {
				c.killNode(ctx, node(0), n%2 == 1, time.Duration(2+c.rng.IntN(4))*time.Second)
			}},
			step{base + 10*time.Second, func(ctx context.Context) {
				// Every other cycle the freeze outlasts the database's idle-in-transaction
				// timeout. The steps run one after another: nothing else happens during it.
				d := freeze + time.Duration(c.rng.IntN(5))*time.Second
				if n%2 == 1 {
					d = c.longFreeze()
				}
				c.freezeNode(node(1), d)
			}},
			step{base + 32*time.Second, func(ctx context.Context) { c.restartExecutor(ctx, n%2, 2*time.Second) }},
			step{base + 40*time.Second, func(ctx context.Context) { c.killNode(ctx, node(2), n%2 == 0, 3*time.Second) }},
			step{base + 50*time.Second, func(ctx context.Context) { c.restartDB(ctx, time.Duration(2+c.rng.IntN(4))*time.Second) }},
			step{base + 60*time.Second, func(ctx context.Context) { c.cut(30 * time.Second) }},
			step{base + 95*time.Second, func(ctx context.Context) { c.latency(100, 50, 15*time.Second) }},
			step{base + 112*time.Second, func(ctx context.Context) { c.killNode(ctx, node(1), true, 2*time.Second) }},
		)
		if _, ok := c.db.(replicated); ok {
			steps = append(steps, step{base + 116*time.Second, c.failover})
		}
	}
	return steps
}

// runFaults runs the plan until the load ends.
func (c *cluster) runFaults(ctx context.Context, loadEnd time.Time) {
	loadStart := loadEnd.Add(-c.o.Load)
	for _, s := range c.plan() {
		at := loadStart.Add(s.At)
		if at.After(loadEnd) {
			return
		}
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return
		}
		s.Do(ctx)
	}
}

// A fault is recorded once it took effect, or with the reason it did not: a run whose fault
// did not happen tested nothing, and fails (Report.Failed). So does a fault whose undoing
// failed (a node not restarted, a network not healed): what followed was not the plan.

// killNode kills node i with SIGKILL and starts it again after down, under the same node id
// or a new one.
func (c *cluster) killNode(ctx context.Context, i int, newID bool, down time.Duration) {
	p := c.nodes[i]
	restart := "same id"
	if newID {
		restart = "new id"
	}
	name, id := p.life.Name, p.nodeID
	what := fmt.Sprintf("SIGKILL %s (%s), restart in %s with %s", p.label, id, down, restart)
	if err := p.signal(syscall.SIGKILL); err != nil {
		c.fault(what, err)
		return
	}
	now := time.Now().UnixMilli()
	k := &Kill{At: now, Proc: name, NodeID: id, Restart: restart, Held: -1}
	c.mu.Lock()
	p.life.Killed = now
	c.kills = append(c.kills, k)
	c.mu.Unlock()
	c.fault(what, nil)
	time.Sleep(down)
	if newID {
		c.nodeGen[i]++
		p.nodeID = fmt.Sprintf("n%d.%d", i+1, c.nodeGen[i])
	}
	if err := c.startProc(ctx, p, true); err != nil {
		c.fault("restart "+p.label, err)
		return
	}
	c.mu.Lock()
	k.Restarted = time.Now().UnixMilli()
	c.mu.Unlock()
}

// longFreeze is how long a freeze must last for the cluster to have taken the node's work
// before it ends: the node timeout, then the database's idle-in-transaction timeout (a node
// frozen inside a transaction holds its life's row, which the leader's recovery waits for,
// until the server ends its session), and the leader's next recovery round, with margin.
func (c *cluster) longFreeze() time.Duration {
	return 3*c.o.Heartbeat + sqlstore.IdleTransactionTimeout + 4*c.o.Heartbeat + 5*time.Second
}

// freezeNode stops node i with SIGSTOP for d, then lets it go on.
func (c *cluster) freezeNode(i int, d time.Duration) {
	p := c.nodes[i]
	what := fmt.Sprintf("SIGSTOP %s (%s) for %s (node timeout %s)", p.label, p.nodeID, d, 3*c.o.Heartbeat)
	// A signal takes effect when the kernel next schedules the process's threads, which on a
	// loaded machine may be a while after kill(2) returns; a run begun meanwhile was begun
	// before the freeze. The freeze counts from when every thread is seen stopped.
	if err := p.signal(syscall.SIGSTOP); err != nil {
		c.fault(what, err)
		return
	}
	err := p.waitStopped()
	frozen := time.Now().UnixMilli()
	c.fault(what, err)
	var held *Kill
	if err == nil && d >= c.longFreeze() {
		// The watcher notes what the node holds now; the cluster must take it back while the
		// node is still frozen.
		held = &Kill{At: frozen, Proc: p.life.Name, NodeID: p.nodeID, Restart: "thawed"}
		c.mu.Lock()
		c.kills = append(c.kills, held)
		c.mu.Unlock()
	}
	if err == nil {
		time.Sleep(d)
	}
	thawed := time.Now().UnixMilli() // before SIGCONT: nothing the process begins precedes it
	if held != nil {
		c.mu.Lock()
		held.ReleaseBy, held.Restarted = thawed, thawed
		c.mu.Unlock()
	}
	if err := p.signal(syscall.SIGCONT); err != nil {
		c.fault("SIGCONT "+p.label, err)
		return
	}
	if d > 3*c.o.Heartbeat {
		c.mu.Lock()
		p.life.Frozen, p.life.Thawed = frozen, thawed
		c.mu.Unlock()
	}
	c.logf("SIGCONT %s", p.label)
}

// restartExecutor kills executor i and starts it again on the same address after down.
func (c *cluster) restartExecutor(ctx context.Context, i int, down time.Duration) {
	p := c.execs[i]
	what := fmt.Sprintf("SIGKILL %s, restart on %s in %s", p.label, p.addr, down)
	if err := p.signal(syscall.SIGKILL); err != nil {
		c.fault(what, err)
		return
	}
	c.mu.Lock()
	p.life.Killed = time.Now().UnixMilli()
	c.mu.Unlock()
	c.fault(what, nil)
	time.Sleep(down)
	if err := c.startProc(ctx, p, false); err != nil {
		c.fault("restart "+p.label, err)
	}
}

// restartDB crashes the database server and starts it again after down.
func (c *cluster) restartDB(ctx context.Context, down time.Duration) {
	what := fmt.Sprintf("database crash, restart in %s", down)
	if err := c.db.Crash(ctx); err != nil {
		c.fault(what, err)
		return
	}
	c.fault(what, nil)
	time.Sleep(down)
	t := time.Now()
	if err := c.db.Start(ctx); err != nil {
		c.fault("restart the database", err)
		return
	}
	c.logf("database back after %s of recovery", time.Since(t).Round(100*time.Millisecond))
}

// failover kills the primary database server with SIGKILL and promotes its synchronous
// standby; the nodes, given both in a multi-host DSN, must find the new primary themselves.
// The old primary's host then becomes the new standby.
func (c *cluster) failover(ctx context.Context) {
	pair := c.db.(replicated)
	from := pair.Addr()
	killed, promoted, err := pair.Failover(ctx)
	what := fmt.Sprintf("SIGKILL the primary database %s, promote the standby %s", from, pair.Addr())
	if promoted.IsZero() {
		c.fault(what, err)
		return
	}
	c.faultAt(killed, what, nil)
	c.logf("standby promoted %s after the kill", promoted.Sub(killed).Round(time.Millisecond))
	if err != nil {
		c.fault("make a new standby of "+from, err)
		return
	}
	c.logf("new standby on %s synchronous after %s", from, time.Since(promoted).Round(time.Millisecond))
}

// cut partitions the database from the nodes for d.
func (c *cluster) cut(d time.Duration) {
	what := fmt.Sprintf("network to the database cut for %s", d)
	for _, px := range c.proxies {
		if err := px.Cut(); err != nil {
			c.fault(what, err)
			return
		}
	}
	c.fault(what, nil)
	time.Sleep(d)
	for _, px := range c.proxies {
		if err := px.Heal(); err != nil {
			c.fault("heal the network to the database", err)
			return
		}
	}
	c.logf("network healed")
}

// latency adds ms ± jitter each way between the nodes and the database for d.
func (c *cluster) latency(ms, jitter int, d time.Duration) {
	what := fmt.Sprintf("latency %d±%d ms to the database for %s", ms, jitter, d)
	for _, px := range c.proxies {
		if err := px.Latency(ms, jitter); err != nil {
			c.fault(what, err)
			return
		}
	}
	c.fault(what, nil)
	time.Sleep(d)
	for _, px := range c.proxies {
		if err := px.Latency(0, 0); err != nil {
			c.fault("remove the latency to the database", err)
		}
	}
}

// watcher follows, from the database, the executions each killed node held: the first look
// after the kill fixes what it held, later ones find when the last of it left the node.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *watcher) stop() { w.cancel(); <-w.done }

func (c *cluster) watch(ctx context.Context) *watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	// held maps each kill to the live executions its node's life owned, by id, to that life
	// (the incarnation): a node restarted under the same id may take the same row again once
	// its earlier life's fires are returned, and that row is then released, held anew.
	held := map[*Kill]map[int64]string{}
	ownedBy := func(e *store.Execution, node string) bool {
		return (e.State == store.ExecAcquired || e.State == store.ExecRunning) && strings.HasPrefix(e.Node, node)
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			polled := time.Now().UnixMilli()
			qctx, qcancel := context.WithTimeout(ctx, 3*time.Second)
			live, err := c.live(qctx)
			qcancel()
			if err != nil {
				continue
			}
			c.mu.Lock()
			for _, k := range c.kills {
				ids, seen := held[k]
				switch {
				case !seen && k.At < polled:
					ids = map[int64]string{}
					for _, e := range live {
						if ownedBy(e, k.NodeID) {
							ids[e.ID] = e.Incarnation
						}
					}
					held[k], k.Held = ids, len(ids)
				case seen && k.Held > 0 && k.Released == 0:
					still := false
					for _, e := range live {
						if life, ok := ids[e.ID]; ok && e.Incarnation == life && ownedBy(e, k.NodeID) {
							still = true
							break
						}
					}
					if !still {
						k.Released = polled
					}
				}
			}
			c.mu.Unlock()
		}
	}()
	return w
}
