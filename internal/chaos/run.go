package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// Options configure one experiment.
type Options struct {
	// Dialect is "postgres" or "mysql" (MariaDB).
	Dialect string
	// Dir holds the database, the ledger and the processes' logs; default a new temp dir,
	// removed at the end unless Keep.
	Dir  string
	Keep bool
	// Triggers is the number of triggers (one job each), firing every 0.5–1 s. Default 100.
	Triggers int
	// Load is how long the triggers fire. Default 75 s.
	Load time.Duration
	// Settle is how long live executions may take to end after the load. Default 30 s.
	Settle time.Duration
	// Long runs the long fault plan: every fault kind again and again, 30 s network cuts.
	Long bool
	// Seed makes the fault plan's choices repeatable. Default 1.
	Seed uint64
	// Heartbeat is the nodes' heartbeat interval (the node timeout is three). Default 2 s.
	Heartbeat time.Duration
	// Log receives progress lines. Default io.Discard.
	Log io.Writer
	// Failover (PostgreSQL only) runs the database as a primary with a synchronous standby
	// (pg_basebackup, streaming replication), gives the nodes a DSN naming both with
	// target_session_attrs=read-write, and replaces the fault plan with one failover: the
	// primary killed with SIGKILL at +12 s, the standby promoted. The long plan on PostgreSQL
	// always runs on such a pair and fails over once a cycle.
	Failover bool
	// WorkflowEvery is how often a run of the workflow load (a diamond DAG, see
	// workflows.go) starts during the load. Default 300 ms (about three runs, 12 node runs, a second); negative: no workflow load.
	WorkflowEvery time.Duration
}

// replicated reports whether the run's database is a primary with a standby.
func (o *Options) replicated() bool { return o.Dialect == "postgres" && (o.Failover || o.Long) }

func (o *Options) defaults() {
	if o.Triggers <= 0 {
		o.Triggers = 100
	}
	if o.Load <= 0 {
		o.Load = 75 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.WorkflowEvery == 0 {
		o.WorkflowEvery = 300 * time.Millisecond
	}
}

// cluster is one experiment's moving parts.
type cluster struct {
	o   Options
	bin string
	dir string
	db  DBServer
	// proxies stand between the nodes and the database: one, or one per server of a pair.
	proxies []*testdb.Proxy
	st      *sqlstore.Store // direct to the database, not through the proxy
	nodes   []*process
	execs   []*process
	start   time.Time
	rng     *rand.Rand
	ledger  string
	nodeGen []int // per node slot, the generation of its node id

	mu     sync.Mutex
	procs  []*Proc
	kills  []*Kill
	faults []Fault
}

func (c *cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.o.Log, "chaos %s +%5.1fs "+format+"\n",
		append([]any{c.o.Dialect, time.Since(c.start).Seconds()}, args...)...)
}

// fault records a fault that took effect (err nil) or did not.
func (c *cluster) fault(what string, err error) { c.faultAt(time.Now(), what, err) }

// faultAt records a fault that took effect at a time past (err nil) or did not.
func (c *cluster) faultAt(at time.Time, what string, err error) {
	f := Fault{At: at.UnixMilli(), What: what}
	if err != nil {
		f.Err = err.Error()
	}
	c.mu.Lock()
	c.faults = append(c.faults, f)
	c.mu.Unlock()
	if err != nil {
		c.logf("fault did not take effect: %s: %v", what, err)
		return
	}
	c.logf("fault: %s", what)
}

// Run runs one experiment and returns its report. An error means the experiment itself
// could not run (a database that would not start, a build that failed); what the cluster did
// wrong is in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	c := &cluster{o: o, start: time.Now(), rng: rand.New(rand.NewPCG(o.Seed, 7))}
	var err error
	if c.dir = o.Dir; c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "sundial-chaos-"+o.Dialect+"-"); err != nil {
			return nil, err
		}
	}
	// The database runs as its own user, which must reach its data directory.
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return nil, err
	}
	c.logf("working in %s", c.dir)
	defer c.close()
	if err := c.setUp(ctx); err != nil {
		return nil, err
	}
	jobs, err := c.schedule(ctx)
	if err != nil {
		return nil, err
	}
	var wf *WorkflowSpec
	if o.WorkflowEvery > 0 {
		if wf, err = c.scheduleWorkflows(ctx); err != nil {
			return nil, err
		}
	}
	loadStart := jobs[0].Trigger.Start
	w := c.watch(ctx)
	wfWait := func() {}
	if wf != nil {
		wfWait = c.startWorkflows(ctx, wf, loadStart, loadStart.Add(o.Load))
	}
	c.runFaults(ctx, loadStart.Add(o.Load))
	wfWait()
	c.settle(ctx, loadStart.Add(o.Load))
	w.stop()
	return c.check(ctx, jobs, wf, loadStart)
}

func (c *cluster) setUp(ctx context.Context) error {
	var err error
	if c.bin, err = buildProc(ctx, c.dir); err != nil {
		return err
	}
	c.ledger = filepath.Join(c.dir, "ledger.jsonl")
	if c.o.Failover && c.o.Dialect != "postgres" {
		return fmt.Errorf("chaos: a failover needs PostgreSQL, not %s", c.o.Dialect)
	}
	if c.o.replicated() {
		c.db, err = newPGPair(filepath.Join(c.dir, "db"))
	} else {
		c.db, err = NewDBServer(c.o.Dialect, filepath.Join(c.dir, "db"))
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "db"), 0o755); err != nil {
		return err
	}
	if err := c.db.Start(ctx); err != nil {
		return err
	}
	upstream, direct := []string{c.db.Addr()}, c.db.DSN(c.db.Addr())
	pair, _ := c.db.(replicated)
	if pair != nil {
		upstream, direct = pair.Addrs(), pair.MultiDSN(pair.Addrs())
	}
	var through []string
	for _, u := range upstream {
		px, err := testdb.NewProxy(u)
		if err != nil {
			return err
		}
		c.proxies = append(c.proxies, px)
		through = append(through, px.Addr())
	}
	if c.st, err = sqlstore.Open(ctx, direct); err != nil {
		return err
	}
	if err := c.st.Migrate(ctx); err != nil {
		return err
	}
	dsn := c.db.DSN(through[0])
	if pair != nil {
		dsn = pair.MultiDSN(through)
	}
	for i := range 3 {
		addr, err := loopbackAddr()
		if err != nil {
			return err
		}
		c.nodeGen = append(c.nodeGen, 0)
		c.nodes = append(c.nodes, &process{label: fmt.Sprintf("node%d", i+1), nodeID: fmt.Sprintf("n%d.0", i+1),
			addr: addr, logDir: c.dir, args: func(p *process) []string {
				return []string{"node", "--addr", p.addr, "--db", dsn, "--node-id", p.nodeID, "--proc", p.label,
					"--ledger", c.ledger, "--heartbeat", c.o.Heartbeat.String()}
			}})
	}
	for i := range 2 {
		addr, err := loopbackAddr()
		if err != nil {
			return err
		}
		// Executor i is given node i first, then the others.
		var urls []string
		for k := range c.nodes {
			urls = append(urls, "http://"+c.nodes[(i+k)%len(c.nodes)].addr)
		}
		server := strings.Join(urls, ",")
		spool := filepath.Join(c.dir, fmt.Sprintf("spool%d", i+1))
		// The first executor takes the SDK's default transport (it dials every node and holds
		// a stream to each), the second the push transport XXL-JOB-style executors use, so the
		// faults reach both paths.
		transport := []string{"stream", "push"}[i]
		c.execs = append(c.execs, &process{label: fmt.Sprintf("exec%d", i+1), addr: addr, logDir: c.dir,
			stream: transport == "stream",
			args: func(p *process) []string {
				return []string{"executor", "--server", server, "--transport", transport, "--listen", p.addr,
					"--proc", p.label, "--ledger", c.ledger, "--spool-dir", spool}
			}})
	}
	for _, n := range c.nodes {
		if err := c.startProc(ctx, n, true); err != nil {
			return err
		}
	}
	for _, e := range c.execs {
		if err := c.startProc(ctx, e, false); err != nil {
			return err
		}
	}
	c.logf("cluster up: 3 nodes, 2 executors, %s at %s through the proxies at %s", c.o.Dialect, upstream, through)
	return nil
}

func (c *cluster) startProc(ctx context.Context, p *process, node bool) error {
	life, err := p.start(c.bin)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = append(c.procs, life)
	c.mu.Unlock()
	return p.waitUp(ctx, node)
}

// schedule creates the load: one job with one trigger each, every 500–1000 ms, from two
// seconds from now for the load's length. A third run on the executors; the rest in-process,
// a fifth of those serial; some retry (and fail a share of first attempts on purpose) and
// some request recovery.
func (c *cluster) schedule(ctx context.Context) ([]JobSpec, error) {
	sched, err := sundial.New(sundial.Config{Store: c.st})
	if err != nil {
		return nil, err
	}
	start := time.Now().Add(2 * time.Second).Truncate(time.Second)
	end := start.Add(c.o.Load)
	var jobs []JobSpec
	for i := range c.o.Triggers {
		j := JobSpec{Name: fmt.Sprintf("chaos-%03d", i), Remote: i%3 == 0, Recovery: i%4 == 1,
			Params: JobParams{RunMs: 20 + c.rng.IntN(280)}}
		if i%5 == 2 {
			j.Serial, j.Params.RunMs = true, 100+c.rng.IntN(300)
		}
		if i%4 == 2 || i%4 == 3 {
			j.Retries, j.Params.FailPct = 2, 10
		}
		interval := time.Duration(500+c.rng.IntN(501)) * time.Millisecond
		j.Trigger = schedule.Trigger{Schedule: schedule.Simple{Interval: interval, RepeatCount: schedule.RepeatForever},
			Start: start.Add(time.Duration(c.rng.IntN(500)) * time.Millisecond), End: end, Misfire: schedule.MisfireIgnore}
		params, _ := json.Marshal(j.Params)
		job := sundial.Job{Name: j.Name, Handler: "ledger", Params: string(params), RequestsRecovery: j.Recovery,
			MaxRetries: j.Retries, RetryBackoff: 200 * time.Millisecond}
		if j.Remote {
			job.App, job.Routing = "chaos", "round_robin"
		}
		if j.Serial {
			job.Concurrency = sundial.Serial
		}
		id, err := sched.ScheduleJob(ctx, job, sundial.Trigger{Schedule: j.Trigger.Schedule, Start: j.Trigger.Start,
			End: j.Trigger.End, Misfire: j.Trigger.Misfire})
		if err != nil {
			return nil, fmt.Errorf("chaos: schedule %s: %w", j.Name, err)
		}
		j.ID = id
		jobs = append(jobs, j)
	}
	c.logf("scheduled %d triggers from %s for %s", len(jobs), start.UTC().Format("15:04:05"), c.o.Load)
	return jobs, nil
}

// live lists the live executions, straight from the database.
func (c *cluster) live(ctx context.Context) ([]*store.Execution, error) {
	var out []*store.Execution
	for _, state := range []store.ExecutionState{store.ExecPending, store.ExecAcquired, store.ExecRunning} {
		var after int64
		for {
			page, err := c.st.ExecutionList(ctx, store.ExecutionFilter{State: state, AfterID: after, Limit: 1000})
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return out, nil
}

// settle waits for the load's end, then until no execution is live, or until none of the live
// ones has moved (ended, or changed state or node) for Settle. A stranded row never moves,
// and is left to the checker as stuck; a backlog that a loaded machine works through late
// keeps moving, and is waited for, up to 5 × Settle in all.
func (c *cluster) settle(ctx context.Context, loadEnd time.Time) {
	select {
	case <-time.After(time.Until(loadEnd)):
	case <-ctx.Done():
		return
	}
	c.logf("load over; settling (until no live execution, or none moved for %s)", c.o.Settle)
	start := time.Now()
	deadline, limit := start.Add(c.o.Settle), start.Add(5*c.o.Settle)
	type where struct {
		state store.ExecutionState
		node  string
	}
	var prev map[int64]where
	for time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		live, err := c.live(qctx)
		cancel()
		if err == nil && len(live) == 0 {
			c.logf("settled after %s: no live execution", time.Since(start).Round(time.Millisecond))
			return
		}
		if err == nil {
			now := make(map[int64]where, len(live))
			for _, x := range live {
				now[x.ID] = where{x.State, x.Node}
			}
			for id, w := range prev {
				if now[id] != w {
					deadline = time.Now().Add(c.o.Settle) // it moved: the cluster is working
					if deadline.After(limit) {
						deadline = limit
					}
					break
				}
			}
			prev = now
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
	c.logf("settle over after %s with executions still live", time.Since(start).Round(time.Millisecond))
}

// check reads the database, stops the cluster, reads the ledger, and classifies.
func (c *cluster) check(ctx context.Context, jobs []JobSpec, wf *WorkflowSpec, loadStart time.Time) (*Report, error) {
	// The database first, as the settle left it: a node's clean stop hands its acquired
	// fires back to pending, which would hide the rows it had stranded.
	var db []DBExec
	var after int64
	for {
		page, err := c.st.ExecutionList(ctx, store.ExecutionFilter{AfterID: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("chaos: read executions: %w", err)
		}
		for _, e := range page {
			db = append(db, DBExec{ID: e.ID, JobID: e.JobID, Sched: e.ScheduledAt, Attempt: e.Attempt, Shard: e.ShardIndex,
				State: string(e.State), Node: e.Node, Cause: string(e.Cause), FiredAt: e.FiredAt, FinishedAt: e.FinishedAt,
				WorkflowNode: e.WorkflowNode,
				Late:         strings.HasSuffix(e.HandleMsg, engine.LateSuffix), Msg: strings.TrimSpace(e.TriggerMsg + " " + e.HandleMsg)})
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
	}
	var runs []WFRun
	if wf != nil {
		var err error
		if runs, err = c.readWorkflows(ctx, wf, db); err != nil {
			return nil, err
		}
	}
	for _, p := range append(append([]*process{}, c.execs...), c.nodes...) {
		p.stop(10 * time.Second)
	}
	entries, err := ReadLedger(c.ledger)
	if err != nil {
		return nil, err
	}
	// The workflow load's runs are checked apart: their jobs have no schedule.
	var wfReport *WorkflowReport
	if wf != nil {
		wfJobs := map[int64]bool{}
		for _, id := range wf.Jobs {
			wfJobs[id] = true
		}
		var wfEntries, rest []Entry
		for _, e := range entries {
			if wfJobs[e.JobID] {
				wfEntries = append(wfEntries, e)
			} else {
				rest = append(rest, e)
			}
		}
		entries = rest
		var restDB []DBExec
		for _, d := range db {
			if !wfJobs[d.JobID] {
				restDB = append(restDB, d)
			}
		}
		db = restDB
		c.mu.Lock()
		var procs []Proc
		for _, p := range c.procs {
			procs = append(procs, *p)
		}
		c.mu.Unlock()
		wfReport = CheckWorkflows(wf, runs, wfEntries, procs)
	}
	c.mu.Lock()
	in := Input{Dialect: c.o.Dialect, Jobs: jobs, Ledger: entries, DB: db, Faults: c.faults, Start: loadStart.UnixMilli(),
		Settle: c.o.Settle, DBComplete: true}
	for _, p := range c.procs {
		in.Procs = append(in.Procs, *p)
	}
	for _, k := range c.kills {
		in.Kills = append(in.Kills, *k)
	}
	c.mu.Unlock()
	rep := Check(in)
	rep.Workflows = wfReport
	return rep, nil
}

func (c *cluster) close() {
	for _, p := range append(append([]*process{}, c.execs...), c.nodes...) {
		_ = p.signal(syscall.SIGCONT)
		_ = p.signal(syscall.SIGKILL)
	}
	if c.st != nil {
		c.st.Close()
	}
	for _, px := range c.proxies {
		px.Close()
	}
	if c.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if pair, ok := c.db.(replicated); ok {
			pair.Shutdown(ctx)
		} else if err := c.db.Crash(ctx); err != nil && !errors.Is(err, context.Canceled) {
			c.logf("stop database: %v", err)
		}
		cancel()
	}
	if !c.o.Keep && c.o.Dir == "" {
		os.RemoveAll(c.dir)
	}
}
