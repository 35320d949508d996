package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// ScaleConfig is the scale scenario: the same firing load (Firing triggers, each every
// Interval) with more and more triggers stored that are not due (Stored, ascending; each
// size adds to the last one's rows). The per-fire cost must stay flat, the node's memory must
// not grow with what is stored, and a node's start must not read every trigger.
type ScaleConfig struct {
	Stored   []int
	Firing   int
	Interval time.Duration
	Warmup   time.Duration
	Duration time.Duration
	// StartTimeout bounds the wait for a node process to start. Default 10 minutes.
	StartTimeout time.Duration
	// Progress, when set, is given each size's result as soon as it is measured (a run to
	// 10M stored takes long enough that one wants the smaller sizes' figures before it ends).
	Progress func(Result)
}

// ScaleReport is what the scale scenario measured beyond a Result's common fields.
type ScaleReport struct {
	// LoadRate is the stored triggers a second the bulk load (COPY on PostgreSQL, multi-row
	// INSERTs elsewhere) added for this size; Analyze is how long the statistics then took.
	LoadRate float64       `json:"load_per_s"`
	Analyze  time.Duration `json:"analyze_ns"`
	// NodeStart is how long the node took from its first line (before it opened the store)
	// until its engine had started; NodeProcess says it ran in a process of its own, whose
	// peak resident memory is Result.RSSMiB and whose CPU is Result.CPUPer1000Fires
	// (otherwise they are this whole process's, the loader included).
	NodeStart   time.Duration `json:"node_start_ns"`
	NodeProcess bool          `json:"node_process"`
	// AcquirePlan is the database's plan for the due triggers' lock, and AcquireIndex
	// whether it reads the due index (triggers_due_idx) rather than every stored trigger.
	AcquirePlan  string `json:"acquire_plan"`
	AcquireIndex bool   `json:"acquire_uses_due_index"`
}

func (s *ScaleReport) String() string {
	return fmt.Sprintf("load=%.0f/s analyze=%s node_start=%s node_process=%v due_index=%v",
		s.LoadRate, ms(s.Analyze), ms(s.NodeStart), s.NodeProcess, s.AcquireIndex)
}

// Scale runs the scale scenario, one Result per stored size. With Options.Spawn the node is
// a process of its own (one; Options.Nodes and Processes are ignored), so that its memory and
// CPU are measured apart from the loader's; without it, one engine in this process.
func Scale(ctx context.Context, opts Options, cfg ScaleConfig) ([]Result, error) {
	if cfg.Firing <= 0 || cfg.Interval <= 0 || cfg.Duration <= 0 || len(cfg.Stored) == 0 {
		return nil, errors.New("bench: scale needs firing triggers, an interval, a duration and stored sizes")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Minute
	}
	opts.Nodes, opts.Processes = 1, 0
	c, err := openCluster(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer c.close()
	st := c.stores[0]
	idle := &store.Job{Group: "bench", Name: fmt.Sprintf("bench-idle-%d", time.Now().UnixNano()), TargetKind: store.TargetLocal,
		Handler: "noop", Concurrency: store.ConcurrencyAllow, Enabled: true}
	if err := store.InTx(ctx, st, func(q store.Querier) error { return q.JobInsert(ctx, idle) }); err != nil {
		return nil, err
	}
	defer st.JobDelete(context.Background(), idle.ID)
	// The idle triggers fire every Interval too, from a week on, spread over a day: rows like
	// the firing ones, in the due index, never due during the run.
	spec := schedule.EncodeSpec(schedule.Simple{Interval: cfg.Interval, RepeatCount: schedule.RepeatForever})
	parked := time.Now().Add(7 * 24 * time.Hour).UnixMilli()
	var out []Result
	loaded := 0
	for _, n := range cfg.Stored {
		want := n - cfg.Firing
		if want < loaded {
			return out, fmt.Errorf("bench: scale: stored sizes must ascend and be at least the firing triggers (%d)", n)
		}
		rep := &ScaleReport{}
		began := time.Now()
		base := loaded
		err := st.LoadTriggers(ctx, want-loaded, func(i int) store.Trigger {
			k := base + i
			at := parked + int64(k)%(24*3600*1000)
			return store.Trigger{JobID: idle.ID, Group: idle.Name, Name: "i" + strconv.Itoa(k), Kind: store.TriggerSimple,
				Spec: spec, TimeZone: "UTC", StartAt: at, NextFireAt: at, MisfirePolicy: "smart", State: store.TriggerWaiting}
		})
		if err != nil {
			return out, err
		}
		if want > loaded {
			rep.LoadRate = float64(want-loaded) / time.Since(began).Seconds()
		}
		loaded = want
		began = time.Now()
		if err := st.Analyze(ctx); err != nil {
			return out, err
		}
		rep.Analyze = time.Since(began)
		if rep.AcquirePlan, err = st.ExplainLockDue(ctx, time.Now().UnixMilli(), 500); err != nil {
			return out, err
		}
		rep.AcquireIndex = strings.Contains(rep.AcquirePlan, "triggers_due_idx")
		r, err := c.scaleRun(ctx, cfg, rep)
		r.Stored = n
		out = append(out, r)
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// scaleRun runs the firing load once on the stored triggers and measures it.
func (c *cluster) scaleRun(ctx context.Context, cfg ScaleConfig, rep *ScaleReport) (Result, error) {
	res := Result{Scenario: "scale", Triggers: cfg.Firing, Nodes: 1, Scale: rep,
		Demanded: float64(cfg.Firing) * float64(time.Second) / float64(cfg.Interval)}
	st := c.stores[0]
	job, ids, _, err := c.insertTriggers(ctx, cfg.Firing, cfg.Interval, schedule.RepeatForever)
	if err != nil {
		return res, err
	}
	defer st.JobDelete(context.Background(), job.ID)

	node, err := c.startScaleNode(ctx, rep, cfg.StartTimeout)
	if err != nil {
		return res, err
	}
	load, err := c.releaseSpread(ctx, ids, cfg.Interval, time.Now().Add(2*time.Second).Truncate(time.Second))
	if err != nil {
		node.stop()
		return res, err
	}
	from, to := load.t0.Add(cfg.Warmup), load.t0.Add(cfg.Warmup+cfg.Duration)
	if err := window(ctx, from, to, node.sample); err != nil {
		node.stop()
		return res, err
	}
	fires, misfires, err := node.stop()
	res.Misfires = misfires
	if err != nil {
		return res, err
	}
	started := load.tally(&res, fires, from, to, cfg.Duration)
	a, b := node.window()
	costs(&res, started, sqlstore.Stats{Statements: a.statements, Transactions: a.transactions},
		sqlstore.Stats{Statements: b.statements, Transactions: b.transactions}, b.cpu-a.cpu)
	res.RSSMiB = node.rssMiB
	return res, nil
}

// scaleNode is the scale scenario's node: a process of its own (Options.Spawn) or an engine
// in this one.
type scaleNode struct {
	c *cluster
	// A process: its stdin (closed to stop it), its files.
	proc             *child
	stdin            *os.File
	stats            string
	from, to         counters // sampled by the process every 100 ms; picked by sample
	wantFrom, wantTo time.Time
	exited           chan struct{}
	waitErr          *error
	rssMiB           float64
}

// counters is a node's cumulative store statements and transactions and CPU time.
type counters struct {
	at                       time.Time
	statements, transactions int64
	cpu                      time.Duration
}

func (c *cluster) startScaleNode(ctx context.Context, rep *ScaleReport, timeout time.Duration) (*scaleNode, error) {
	n := &scaleNode{c: c}
	if c.opts.Spawn == nil {
		began := time.Now()
		if err := c.start(ctx); err != nil {
			c.stop()
			return nil, err
		}
		rep.NodeStart = time.Since(began)
		return n, nil
	}
	rep.NodeProcess = true
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("sundial-bench-scale-%d-%d", os.Getpid(), time.Now().UnixNano()))
	n.stats, n.stdin = base+".stats", w
	cmd, err := c.opts.Spawn(ctx, NodeSpec{DSN: c.opts.DSN, Out: base + ".fires", Stats: n.stats, Stdin: r})
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	n.proc = &child{cmd, base + ".fires"}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(timeout)
	for {
		st, err := readNodeStats(n.stats)
		if err == nil && st.start > 0 {
			rep.NodeStart = st.start
			break
		}
		select {
		case <-exited:
			w.Close()
			return nil, fmt.Errorf("bench: scale: the node process ended before it started: %v", waitErr)
		case <-ctx.Done():
			w.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.Close()
			return nil, fmt.Errorf("bench: scale: the node process did not start within %s", timeout)
		}
	}
	// Reap through the goroutine above: stop waits on exited.
	n.proc.cmd = nil
	n.exited, n.waitErr = exited, &waitErr
	return n, nil
}

// sample notes the node's counters at a window edge: in this process it reads them now; for
// a process it remembers the time, and window picks the process's sample nearest it.
func (n *scaleNode) sample(at time.Time) {
	if n.proc != nil {
		if n.wantFrom.IsZero() {
			n.wantFrom = at
		} else {
			n.wantTo = at
		}
		return
	}
	s := n.c.storeStats()
	x := counters{at: time.Now(), statements: s.Statements, transactions: s.Transactions, cpu: sampleUsage().cpu}
	if n.from.at.IsZero() {
		n.from = x
	} else {
		n.to = x
	}
}

func (n *scaleNode) window() (counters, counters) { return n.from, n.to }

// stop stops the node and returns the fires it ran.
func (n *scaleNode) stop() ([]fire, int64, error) {
	if n.proc == nil {
		misfires, err := n.c.stop()
		n.rssMiB = peakRSSMiB("self")
		n.c.rec.mu.Lock()
		defer n.c.rec.mu.Unlock()
		fires := n.c.rec.fires
		n.c.rec.fires = nil
		return fires, misfires, err
	}
	n.stdin.Close()
	<-n.exited
	defer os.Remove(n.stats)
	defer os.Remove(n.proc.out)
	if *n.waitErr != nil {
		return nil, 0, fmt.Errorf("bench: scale: node process: %w", *n.waitErr)
	}
	st, err := readNodeStats(n.stats)
	if err != nil {
		return nil, 0, err
	}
	n.rssMiB = float64(st.rssKiB) / 1024
	n.from, n.to = st.nearest(n.wantFrom), st.nearest(n.wantTo)
	fires, err := readFires(n.proc.out)
	return fires, 0, err
}

// nodeStats is a node process's stats file, read back.
type nodeStats struct {
	start   time.Duration
	samples []counters
	rssKiB  int64
}

func (s nodeStats) nearest(t time.Time) counters {
	var best counters
	for _, x := range s.samples {
		if best.at.IsZero() || absDur(x.at.Sub(t)) < absDur(best.at.Sub(t)) {
			best = x
		}
	}
	return best
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// The stats file's lines:
//
//	start <ns from the process's first line to its engine started>
//	sample <unix ms> <statements> <transactions> <cpu ns>
//	rss_hwm_kib <peak resident memory, /proc/self/status VmHWM>
func readNodeStats(path string) (nodeStats, error) {
	var s nodeStats
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue // a line being written
		}
		v := make([]int64, len(fs)-1)
		for i := range v {
			v[i], _ = strconv.ParseInt(fs[i+1], 10, 64)
		}
		switch {
		case fs[0] == "start":
			s.start = time.Duration(v[0])
		case fs[0] == "sample" && len(v) == 4:
			s.samples = append(s.samples, counters{at: time.UnixMilli(v[0]), statements: v[1], transactions: v[2], cpu: time.Duration(v[3])})
		case fs[0] == "rss_hwm_kib":
			s.rssKiB = v[0]
		}
	}
	return s, sc.Err()
}

// statsWriter is a node process's side of the stats file.
type statsWriter struct {
	f    *os.File
	st   *sqlstore.Store
	mu   sync.Mutex
	done chan struct{}
	wg   sync.WaitGroup
}

func newStatsWriter(path string, start time.Duration, st *sqlstore.Store) (*statsWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &statsWriter{f: f, st: st, done: make(chan struct{})}
	w.sample()
	fmt.Fprintf(f, "start %d\n", max(start, 1))
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w, nil
}

func (w *statsWriter) sample() {
	s := w.st.Stats()
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.f, "sample %d %d %d %d\n", time.Now().UnixMilli(), s.Statements, s.Transactions, int64(sampleUsage().cpu))
}

func (w *statsWriter) close() error {
	close(w.done)
	w.wg.Wait()
	w.sample()
	fmt.Fprintf(w.f, "rss_hwm_kib %d\n", int64(peakRSSMiB("self")*1024))
	return w.f.Close()
}

// peakRSSMiB reads a process's peak resident memory (VmHWM) from /proc/<pid>/status; where
// there is no /proc, this process's getrusage peak.
func peakRSSMiB(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return maxRSSMiB()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return float64(kib) / 1024
		}
	}
	return 0
}
