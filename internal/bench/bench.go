// Package bench runs Sundial's standard performance scenarios against a store and reports
// throughput, lateness, cost and correctness (duplicates and missing fires) of what fired.
package bench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// Options are what every scenario shares.
type Options struct {
	// DSN names the store; it is migrated and analysed before the run.
	DSN string
	// Nodes is how many engines share the store, in this process. Default 1.
	Nodes int
	// Processes is how many more nodes run as separate processes, each started by Spawn.
	Processes int
	// Spawn starts a node process (`sundial bench node`, whose body is RunNode) as spec says.
	Spawn func(ctx context.Context, spec NodeSpec) (*exec.Cmd, error)
	// Engine tunes the engines; Store, Dispatcher, NodeID and Logger are set by the run.
	Engine engine.Config
	Logger *slog.Logger
	// Work is how long each fire's handler takes in the in-process scenarios (0: it returns
	// at once). With Engine.MaxRunning it bounds a node's capacity where the database would
	// not: MaxRunning / Work fires a second.
	Work time.Duration
	// Operations splits the window's statements and transactions per fire by the store
	// operation that sent them (Result.Operations). It walks the stack on every statement,
	// so it slows the nodes: counts, not timings, are what such a run measures.
	Operations bool
}

// Result is what a scenario measured. Durations are in nanoseconds in JSON.
type Result struct {
	Scenario string  `json:"scenario"`
	Triggers int     `json:"triggers"`
	Stored   int     `json:"stored_triggers,omitempty"`
	Nodes    int     `json:"nodes"`
	Demanded float64 `json:"demanded_fires_per_s,omitempty"`
	Achieved float64 `json:"achieved_fires_per_s"`

	P50  time.Duration `json:"lateness_p50_ns"`
	P99  time.Duration `json:"lateness_p99_ns"`
	P999 time.Duration `json:"lateness_p999_ns"`
	Max  time.Duration `json:"lateness_max_ns"`

	Fires      int   `json:"fires"`
	Misfires   int64 `json:"misfires"`
	Duplicates int   `json:"duplicates"`
	// Missing counts the window's fires that did not run although a later fire of their
	// trigger did: lost fires. Unfired counts those still due when the run stopped, with
	// no later fire of their trigger run: the node was behind.
	Missing int `json:"missing"`
	Unfired int `json:"unfired"`
	// Incomplete counts the remote runs due in the window whose execution had not succeeded
	// when the run ended: a result that did not come back, or a dispatch that failed.
	Incomplete int `json:"incomplete,omitempty"`

	Drain      time.Duration `json:"drain_ns,omitempty"` // backlog: first due → last fire started
	InsertRate float64       `json:"insert_per_s,omitempty"`
	BatchRate  float64       `json:"insert_batch_per_s,omitempty"` // schedule: jobs/s in one transaction

	StatementsPerFire   float64 `json:"statements_per_fire"`
	TransactionsPerFire float64 `json:"transactions_per_fire"`
	CPUPer1000Fires     float64 `json:"cpu_s_per_1000_fires"` // this process only, not the database
	RSSMiB              float64 `json:"rss_mib"`
	// Operations is the per-fire cost split by store operation ("Method ← caller"), with
	// Options.Operations.
	Operations map[string]OperationCost `json:"operations,omitempty"`

	// The overload scenario (Overload) fills these.
	Overload *OverloadReport `json:"overload,omitempty"`
	// The scale scenario (Scale) fills these.
	Scale *ScaleReport `json:"scale,omitempty"`
}

// OperationCost is one store operation's statements and transactions per fire.
type OperationCost struct {
	StatementsPerFire   float64 `json:"statements_per_fire"`
	TransactionsPerFire float64 `json:"transactions_per_fire"`
}

// OperationsTable prints Operations, the costliest in transactions first.
func (r Result) OperationsTable() string {
	names := make([]string, 0, len(r.Operations))
	for k := range r.Operations {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		x, y := r.Operations[a], r.Operations[b]
		if c := cmp.Compare(y.TransactionsPerFire, x.TransactionsPerFire); c != 0 {
			return c
		}
		if c := cmp.Compare(y.StatementsPerFire, x.StatementsPerFire); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %8s  operation\n", "tx/fire", "st/fire")
	for _, n := range names {
		c := r.Operations[n]
		fmt.Fprintf(&b, "%8.3f %8.3f  %s\n", c.TransactionsPerFire, c.StatementsPerFire, n)
	}
	return b.String()
}

func (r Result) String() string {
	if r.Scenario == "schedule" {
		return fmt.Sprintf("%-9s jobs=%d single=%.0f/s batch=%.0f/s stmts/job=%.2f tx/job=%.2f",
			r.Scenario, r.Triggers, r.InsertRate, r.BatchRate, r.StatementsPerFire, r.TransactionsPerFire)
	}
	s := fmt.Sprintf("%-9s triggers=%d nodes=%d", r.Scenario, r.Triggers, r.Nodes)
	if r.Stored > r.Triggers {
		s += fmt.Sprintf(" stored=%d", r.Stored)
	}
	if r.Demanded > 0 {
		s += fmt.Sprintf(" demanded=%.0f/s", r.Demanded)
	}
	s += fmt.Sprintf(" achieved=%.1f/s lateness p50=%s p99=%s p99.9=%s max=%s", r.Achieved, ms(r.P50), ms(r.P99), ms(r.P999), ms(r.Max))
	if r.Drain > 0 {
		s += " drain=" + ms(r.Drain)
	}
	s += fmt.Sprintf(" fires=%d misfires=%d duplicates=%d missing=%d", r.Fires, r.Misfires, r.Duplicates, r.Missing)
	if r.Unfired > 0 {
		s += fmt.Sprintf(" unfired=%d (behind)", r.Unfired)
	}
	if r.Scenario == "remote" {
		s += fmt.Sprintf(" incomplete=%d", r.Incomplete)
	}
	if r.Overload != nil {
		s += " " + r.Overload.String()
	}
	if r.Scale != nil {
		s += " " + r.Scale.String()
	}
	return s + fmt.Sprintf(" stmts/fire=%.2f tx/fire=%.2f cpu-s/1k=%.3f rss=%.0fMiB",
		r.StatementsPerFire, r.TransactionsPerFire, r.CPUPer1000Fires, r.RSSMiB)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// fire is one handler start the recorder saw.
type fire struct {
	trigger     int64
	scheduledAt int64 // unix ms
	startedAt   int64 // unix ns
	// execution is set by remote handlers, which are not told their trigger; resolve fills
	// trigger from it.
	execution int64
}

// recorder is the scenarios' dispatcher: it notes every fire and returns, after work.
type recorder struct {
	work time.Duration // Options.Work

	mu       sync.Mutex
	fires    []fire
	inFlight int
}

func (r *recorder) Dispatch(ctx context.Context, f *engine.Fire) engine.Result {
	now := time.Now().UnixNano()
	r.mu.Lock()
	r.fires = append(r.fires, fire{trigger: f.Execution.TriggerID, scheduledAt: f.Execution.ScheduledAt, startedAt: now})
	r.inFlight++
	r.mu.Unlock()
	if r.work > 0 {
		t := time.NewTimer(r.work)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	return engine.Result{}
}

// busy reports whether a handler is running.
func (r *recorder) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight > 0
}

func (r *recorder) add(f fire) {
	r.mu.Lock()
	r.fires = append(r.fires, f)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fires)
}

// cluster is the stores and engines of one run, and its node processes.
type cluster struct {
	opts     Options
	stores   []*sqlstore.Store
	engines  []*engine.Engine
	rec      *recorder
	children []child
	// remote, when set, makes the nodes servers whose fires run on executors over HTTP.
	remote *remoteRig
	// beats, when set, times the engines' heartbeat writes (the overload scenario).
	beats *beatLog
}

type child struct {
	cmd *exec.Cmd
	out string
}

func openCluster(ctx context.Context, opts Options) (*cluster, error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &cluster{opts: opts, rec: &recorder{work: opts.Work}}
	var storeOpts []sqlstore.Option
	if opts.Operations {
		storeOpts = append(storeOpts, sqlstore.WithOperationCounts())
	}
	for range opts.Nodes {
		st, err := sqlstore.Open(ctx, opts.DSN, storeOpts...)
		if err != nil {
			c.close()
			return nil, err
		}
		c.stores = append(c.stores, st)
	}
	if err := c.stores[0].Migrate(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// start starts one engine per store (or, remote, one server per store and the executors).
func (c *cluster) start(ctx context.Context) error {
	if c.remote != nil {
		return c.remote.start(ctx, c)
	}
	stamp := time.Now().UnixNano()
	for i, st := range c.stores {
		ec := c.opts.Engine
		ec.Store, ec.Dispatcher, ec.NodeID, ec.Logger = st, c.rec, fmt.Sprintf("bench-%d-%d", i, stamp), c.opts.Logger
		if c.beats != nil {
			ec.Store = &timedBeats{Store: st, log: c.beats}
		}
		e, err := engine.New(ec)
		if err != nil {
			return err
		}
		if err := e.Start(ctx); err != nil {
			return err
		}
		c.engines = append(c.engines, e)
	}
	return nil
}

// spawn starts the node processes, which run until the given time.
func (c *cluster) spawn(ctx context.Context, until time.Time) error {
	if c.opts.Processes > 0 && c.opts.Spawn == nil {
		return errors.New("bench: Options.Processes needs Options.Spawn")
	}
	for i := range c.opts.Processes {
		out := filepath.Join(os.TempDir(), fmt.Sprintf("sundial-bench-%d-%d.fires", os.Getpid(), i))
		cmd, err := c.opts.Spawn(ctx, NodeSpec{DSN: c.opts.DSN, Until: until, Out: out})
		if err != nil {
			return err
		}
		c.children = append(c.children, child{cmd, out})
	}
	return nil
}

// reap waits for the node processes and adds the fires they ran to the recorder.
func (c *cluster) reap() error {
	var errs []error
	for _, ch := range c.children {
		if err := ch.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("bench: node process: %w", err))
			continue
		}
		fires, err := readFires(ch.out)
		os.Remove(ch.out)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.rec.mu.Lock()
		c.rec.fires = append(c.rec.fires, fires...)
		c.rec.mu.Unlock()
	}
	c.children = nil
	return errors.Join(errs...)
}

// NodeSpec is what a node process of a multi-process run is told.
type NodeSpec struct {
	DSN string
	// Until is when the node stops; zero: when its standard input ends (Stdin closed).
	Until time.Time
	// Out receives the fires the node ran, when it stops.
	Out string
	// Stats, when set, receives the node's start time as soon as it started, then a sample of
	// its counters every 100 ms and its peak resident memory when it stops (see nodeStats).
	Stats string
	// Stdin is the node's standard input (with a zero Until: the parent closes its other end
	// to stop the node).
	Stdin *os.File
}

// RunNode runs one node on spec.DSN until spec says, then writes the fires it ran to
// spec.Out: the body of a node process of a multi-process run.
func RunNode(ctx context.Context, opts Options, spec NodeSpec, stdin io.Reader) error {
	begun := time.Now()
	opts.Nodes, opts.Processes, opts.DSN = 1, 0, spec.DSN
	c, err := openCluster(ctx, opts)
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.start(ctx); err != nil {
		return err
	}
	var stats *statsWriter
	if spec.Stats != "" {
		if stats, err = newStatsWriter(spec.Stats, time.Since(begun), c.stores[0]); err != nil {
			c.stop()
			return err
		}
	}
	if spec.Until.IsZero() {
		_, _ = io.Copy(io.Discard, stdin)
	} else {
		sleepUntil(ctx, spec.Until)
	}
	_, err = c.stop()
	if stats != nil {
		err = errors.Join(err, stats.close())
	}
	if err != nil {
		return err
	}
	return writeFires(spec.Out, c.rec.fires)
}

func writeFires(path string, fires []fire) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, x := range fires {
		fmt.Fprintf(w, "%d %d %d\n", x.trigger, x.scheduledAt, x.startedAt)
	}
	return errors.Join(w.Flush(), f.Close())
}

func readFires(path string) ([]fire, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fire
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var x fire
		if _, err := fmt.Sscan(sc.Text(), &x.trigger, &x.scheduledAt, &x.startedAt); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", path, err)
		}
		out = append(out, x)
	}
	return out, sc.Err()
}

// stop stops the engines and returns the misfires they counted.
func (c *cluster) stop() (misfires int64, err error) {
	if c.remote != nil {
		return c.remote.stop(c.stores[0])
	}
	for _, e := range c.engines {
		misfires += e.Stats().Misfired.Load()
		if stopErr := e.Stop(context.Background()); stopErr != nil {
			err = stopErr
		}
	}
	c.engines = nil
	return misfires, err
}

func (c *cluster) close() {
	for _, st := range c.stores {
		st.Close()
	}
}

func (c *cluster) storeStats() sqlstore.Stats {
	var s sqlstore.Stats
	for _, st := range c.stores {
		x := st.Stats()
		s.Statements += x.Statements
		s.Transactions += x.Transactions
		for k, v := range x.ByOperation {
			if s.ByOperation == nil {
				s.ByOperation = map[string]sqlstore.OpCount{}
			}
			sum := s.ByOperation[k]
			sum.Statements += v.Statements
			sum.Transactions += v.Transactions
			s.ByOperation[k] = sum
		}
	}
	return s
}

// insertTriggers stores one job with n simple triggers (interval, repeat) parked far in the
// future, so nothing fires while the rest are inserted, and analyses the tables (as Quartz's
// harness does after its bulk insert).
func (c *cluster) insertTriggers(ctx context.Context, n int, interval time.Duration, repeat int) (*store.Job, []int64, float64, error) {
	st := c.stores[0]
	start := time.Now()
	parked := start.Add(24 * time.Hour).UnixMilli()
	job := &store.Job{Group: "bench", Name: fmt.Sprintf("bench-%d", start.UnixNano()), TargetKind: store.TargetLocal,
		Handler: "noop", Concurrency: store.ConcurrencyAllow, Enabled: true}
	if c.remote != nil {
		job.TargetKind, job.App, job.Handler, job.Routing = store.TargetRemote, c.remote.app, remoteHandler, c.remote.cfg.Routing
	}
	spec := schedule.EncodeSpec(schedule.Simple{Interval: interval, RepeatCount: repeat})
	ids := make([]int64, 0, n)
	for len(ids) < n {
		tx, err := st.Begin(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		if job.ID == 0 {
			if err := tx.JobInsert(ctx, job); err != nil {
				tx.Rollback()
				return nil, nil, 0, err
			}
		}
		for i := len(ids); i < min(n, len(ids)+5000); i++ {
			tr := &store.Trigger{JobID: job.ID, Group: job.Name, Name: fmt.Sprintf("t%d", i), Kind: store.TriggerSimple,
				Spec: spec, TimeZone: "UTC", StartAt: parked, Priority: 5, MisfirePolicy: "smart",
				State: store.TriggerWaiting, NextFireAt: parked}
			if err := tx.TriggerInsert(ctx, tr); err != nil {
				tx.Rollback()
				return nil, nil, 0, err
			}
			ids = append(ids, tr.ID)
		}
		if err := tx.Commit(); err != nil {
			return nil, nil, 0, err
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	return job, ids, rate, st.Analyze(ctx)
}

// release moves the parked triggers to their first fire times.
func (c *cluster) release(ctx context.Context, ids []int64, first func(i int) time.Time) error {
	updates := make([]store.TriggerFireUpdate, len(ids))
	for i, id := range ids {
		at := first(i).UnixMilli()
		updates[i] = store.TriggerFireUpdate{ID: id, NextFireAt: at, StartAt: at, State: store.TriggerWaiting}
	}
	for len(updates) > 0 {
		n := min(len(updates), 5000)
		if _, err := c.stores[0].TriggersUpdateAfterFire(ctx, updates[:n]); err != nil {
			return err
		}
		updates = updates[n:]
	}
	return nil
}

// latenessOf fills the lateness percentiles from the fires scheduled in [from, to).
func latenessOf(res *Result, fires []fire, from, to time.Time) {
	var late []time.Duration
	for _, f := range fires {
		if at := time.UnixMilli(f.scheduledAt); !at.Before(from) && at.Before(to) {
			late = append(late, time.Duration(f.startedAt-f.scheduledAt*int64(time.Millisecond)))
		}
	}
	if len(late) == 0 {
		return
	}
	slices.Sort(late)
	pct := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
	res.P50, res.P99, res.P999, res.Max = pct(0.50), pct(0.99), pct(0.999), late[len(late)-1]
}

// duplicatesOf counts fires of the same (trigger, scheduled time) beyond the first, and
// returns the set of fires seen.
func duplicatesOf(fires []fire) (int, map[[2]int64]bool) {
	seen := make(map[[2]int64]bool, len(fires))
	dups := 0
	for _, f := range fires {
		k := [2]int64{f.trigger, f.scheduledAt}
		if seen[k] {
			dups++
		}
		seen[k] = true
	}
	return dups, seen
}

// usage samples this process's CPU time and resident memory.
type usage struct{ cpu time.Duration }

func sampleUsage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

// maxRSSMiB is the process's peak resident memory.
func maxRSSMiB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// costs fills the per-fire cost figures.
func costs(res *Result, fires int, before, after sqlstore.Stats, cpu time.Duration) {
	if fires == 0 {
		return
	}
	res.StatementsPerFire = float64(after.Statements-before.Statements) / float64(fires)
	res.TransactionsPerFire = float64(after.Transactions-before.Transactions) / float64(fires)
	res.CPUPer1000Fires = cpu.Seconds() * 1000 / float64(fires)
	res.RSSMiB = maxRSSMiB()
	for k, v := range after.ByOperation {
		was := before.ByOperation[k]
		st, tx := v.Statements-was.Statements, v.Transactions-was.Transactions
		if st == 0 && tx == 0 {
			continue
		}
		if res.Operations == nil {
			res.Operations = map[string]OperationCost{}
		}
		res.Operations[k] = OperationCost{StatementsPerFire: float64(st) / float64(fires), TransactionsPerFire: float64(tx) / float64(fires)}
	}
}
