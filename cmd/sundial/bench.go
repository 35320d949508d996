package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/bench"
)

// benchFlags are the flags every scenario shares.
type benchFlags struct {
	db, output, cpuProfile string
	logLevel               slog.Level
	opts                   bench.Options
}

func (b *benchFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&b.db, "db", "", "store DSN: a SQLite path, postgres://… or mysql://… (default: a fresh SQLite file in a temporary directory)")
	f.IntVar(&b.opts.Nodes, "nodes", 1, "engines sharing the store, in this process")
	f.IntVar(&b.opts.Processes, "processes", 0, "more nodes, each a separate sundial process (steady and scale)")
	f.IntVar(&b.opts.Engine.BatchSize, "batch", 0, "engine acquisition batch size (default: the engine's)")
	f.DurationVar(&b.opts.Engine.LookAhead, "look-ahead", 0, "engine look-ahead window (default: the engine's)")
	f.IntVar(&b.opts.Engine.Acquirers, "acquirers", 0, "acquisition rounds a node runs at once (default: the engine's)")
	f.StringVarP(&b.output, "output", "o", "table", "table or json")
	f.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.TextVar(&b.logLevel, "log-level", slog.LevelWarn, "engine log level (debug, info, warn, error), on standard error")
}

// run prepares the store and profile, runs the scenario and prints its results, one a line.
func (b *benchFlags) run(cmd *cobra.Command, scenario func(ctx context.Context, opts bench.Options) ([]bench.Result, error)) error {
	return runScenario(b, cmd, scenario, func(rs []bench.Result, _ error) bool { return len(rs) > 0 },
		func(w io.Writer, rs []bench.Result) {
			for _, r := range rs {
				fmt.Fprintln(w, r)
			}
		})
}

// runScenario prepares the store and profile, runs the scenario and prints what it measured
// when shown says there is something to show: as JSON (-o json) or with table.
func runScenario[R any](b *benchFlags, cmd *cobra.Command, scenario func(ctx context.Context, opts bench.Options) (R, error),
	shown func(R, error) bool, table func(io.Writer, R)) error {
	if b.output != "table" && b.output != "json" {
		return usageErrorf("-o %q: want table or json", b.output)
	}
	if b.opts.Nodes < 1 {
		return usageErrorf("--nodes %d: must be at least 1", b.opts.Nodes)
	}
	b.opts.DSN = b.db
	if b.opts.DSN == "" {
		dir, err := os.MkdirTemp("", "sundial-bench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		b.opts.DSN = filepath.Join(dir, "bench.db")
	}
	b.opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: b.logLevel}))
	b.opts.Spawn = b.spawnNode(cmd)
	if b.cpuProfile != "" {
		f, err := os.Create(b.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := scenario(cmd.Context(), b.opts)
	if !shown(r, err) {
		return err
	}
	if b.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if werr := enc.Encode(r); werr != nil {
			return werr
		}
	} else {
		table(cmd.OutOrStdout(), r)
	}
	return err
}

// spawnNode starts `sundial bench node` as a separate process with the run's engine flags.
func (b *benchFlags) spawnNode(cmd *cobra.Command) func(ctx context.Context, spec bench.NodeSpec) (*exec.Cmd, error) {
	return func(ctx context.Context, spec bench.NodeSpec) (*exec.Cmd, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		var until int64 // 0: until standard input ends
		if !spec.Until.IsZero() {
			until = spec.Until.UnixMilli()
		}
		c := exec.CommandContext(ctx, self, "bench", "node", "--db", spec.DSN, "--until", strconv.FormatInt(until, 10),
			"--out", spec.Out, "--stats", spec.Stats, "--batch", strconv.Itoa(b.opts.Engine.BatchSize), "--look-ahead", b.opts.Engine.LookAhead.String(),
			"--acquirers", strconv.Itoa(b.opts.Engine.Acquirers), "--log-level", b.logLevel.String())
		c.Stderr = cmd.ErrOrStderr()
		if spec.Stdin != nil {
			c.Stdin = spec.Stdin
		}
		return c, c.Start()
	}
}

func newBenchNodeCmd(b *benchFlags) *cobra.Command {
	var (
		until int64
		spec  bench.NodeSpec
	)
	cmd := &cobra.Command{
		Use:    "node",
		Short:  "One node of a multi-process run (started by the other scenarios)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if b.db == "" || spec.Out == "" {
				return usageErrorf("--db and --out are required")
			}
			spec.DSN = b.db
			if until > 0 {
				spec.Until = time.UnixMilli(until)
			}
			b.opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: b.logLevel}))
			return bench.RunNode(cmd.Context(), b.opts, spec, cmd.InOrStdin())
		},
	}
	cmd.Flags().Int64Var(&until, "until", 0, "stop at this Unix time in milliseconds (0: when standard input ends)")
	cmd.Flags().StringVar(&spec.Out, "out", "", "write the fires run to this file")
	cmd.Flags().StringVar(&spec.Stats, "stats", "", "write the start time, counter samples and peak memory to this file")
	return cmd
}

func newBenchCmd() *cobra.Command {
	var b benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run Sundial's performance scenarios against a store",
		Long: `Run Sundial's performance scenarios against a store and print what they measured:
fires/s, lateness (scheduled time → handler start) percentiles, misfires, duplicates and
missing fires (both must be 0), store statements and transactions per fire, and this
process's CPU seconds per 1,000 fires and peak resident memory.`,
	}
	b.register(cmd)
	cmd.AddCommand(newBenchSteadyCmd(&b), newBenchScaleCmd(&b), newBenchBacklogCmd(&b), newBenchScheduleCmd(&b),
		newBenchRemoteCmd(&b), newBenchOverloadCmd(&b), newBenchHistoryCmd(&b), newBenchNodeCmd(&b), newBenchMapCmd(&b))
	return cmd
}

func newBenchSteadyCmd(b *benchFlags) *cobra.Command {
	var cfg bench.SteadyConfig
	cmd := &cobra.Command{
		Use:   "steady",
		Short: "M triggers each firing every I, measured for D after a warm-up",
		Example: `  sundial bench steady --triggers 10000 --interval 1s --duration 20s
  sundial bench steady --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable' --nodes 2 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSteady(cfg); err != nil {
				return err
			}
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				r, err := bench.Steady(ctx, opts, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	steadyFlags(cmd, &cfg, 10000)
	return cmd
}

func steadyFlags(cmd *cobra.Command, cfg *bench.SteadyConfig, triggers int) {
	f := cmd.Flags()
	f.IntVar(&cfg.Triggers, "triggers", triggers, "number of firing triggers (M)")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "each trigger's interval (I)")
	f.DurationVar(&cfg.Warmup, "warmup", 5*time.Second, "warm-up before the measured window")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured window (D)")
}

func checkSteady(cfg bench.SteadyConfig) error {
	if cfg.Triggers < 1 || cfg.Interval < time.Millisecond || cfg.Duration <= 0 || cfg.Warmup < 0 {
		return usageErrorf("--triggers must be positive, --interval at least 1ms, --duration positive")
	}
	return nil
}

func newBenchRemoteCmd(b *benchFlags) *cobra.Command {
	var cfg bench.RemoteConfig
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "The steady load through real executors over HTTP",
		Long: `The steady load (M triggers each firing every I, measured for D after a warm-up) on one
remote job, run through real executors over HTTP.

Each node (--nodes) is a full server — engine plus the executor endpoints — serving HTTP
on a loopback port; --executors executors built with the executor SDK, one app, run a
no-op handler. The executors register before the nodes start and the job's routing
(--routing) picks one per fire. With --transport stream (the default) each executor holds
a WebSocket to each node: the node sends runs down it in batches and the results come back
up it. With --transport push each executor listens on its own loopback port, the node
POSTs the run to it, and the executor reports the result back to a node's results
endpoint. Either way the results complete the executions in batches.

Everything runs in this one process: there is no network between the machines, and
the CPU seconds and memory are those of the nodes, the executors and both HTTP sides
together. Store statements and transactions are the nodes' (executors have no store).

Lateness runs from the scheduled time to the start of the handler in the executor (a
fire counts when its handler starts). incomplete counts the window's executions that had
not succeeded when the run ended (a result that never came back, or a failed dispatch);
like duplicates and missing it must be 0. --processes is not supported;
sharding_broadcast is refused (it runs each fire on every executor).`,
		Example: `  sundial bench remote --triggers 1000 --interval 1s --warmup 5s --duration 15s
  sundial bench remote --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable' --executors 4 --routing least_recently_used -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSteady(cfg.SteadyConfig); err != nil {
				return err
			}
			if cfg.Executors < 1 {
				return usageErrorf("--executors %d: must be at least 1", cfg.Executors)
			}
			if cfg.Transport != executor.TransportStream && cfg.Transport != executor.TransportPush {
				return usageErrorf("--transport %q: want stream or push", cfg.Transport)
			}
			st, err := dispatch.ParseStrategy(cfg.Routing)
			if err != nil {
				return usageErrorf("--routing: %v", err)
			}
			if st == dispatch.ShardingBroadcast {
				return usageErrorf("--routing %s: runs each fire on every executor; pick a strategy that runs it once", st)
			}
			if b.opts.Processes > 0 {
				return usageErrorf("--processes: the remote scenario runs its nodes in this process (use --nodes)")
			}
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				r, err := bench.Remote(ctx, opts, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	steadyFlags(cmd, &cfg.SteadyConfig, 1000)
	cmd.Flags().IntVar(&cfg.Executors, "executors", 2, "executor instances (E), all of one app")
	cmd.Flags().StringVar(&cfg.Transport, "transport", executor.TransportStream, "the executors' transport: stream (each holds a WebSocket to each node) or push (the nodes POST runs to them)")
	cmd.Flags().StringVar(&cfg.Routing, "routing", string(dispatch.RoundRobin), "the job's routing strategy (first, round_robin, random, consistent_hash, least_frequently_used, least_recently_used, failover, busy_over, last)")
	return cmd
}

func newBenchOverloadCmd(b *benchFlags) *cobra.Command {
	var cfg bench.OverloadConfig
	cmd := &cobra.Command{
		Use:   "overload",
		Short: "Capacity first, then twice it demanded: slower, never stopped",
		Long: `Measure the nodes' capacity (a short ramp of steady loads: --ramp-from fires/s, then
twice that, and so on, each for a second's warm-up and --ramp-step, until the nodes fire
less than 90 % of the demand; that demand is then held for --ramp-hold, and what they fired
through it is the capacity), then demand --factor times it for --duration (capacity ×
factor × interval triggers, each firing every --interval), and report:

  ramp, hold         each step's demand and what the nodes fired
  windows            the fires started in each second of the demand; min is the fewest,
                     with its share of the capacity (target: at least 90 %, no window at 0)
  leadership_changes the nodes' leadership transitions until the drain ended (target 0)
  fence_lapses       gaps between a node's successful heartbeats longer than its node
                     timeout (target 0)
  heartbeat p99/max  the heartbeat writes' durations (target: p99 at most 1 s)
  drain              after the demand ended, how long until nothing due was left (the
                     triggers' misfire policies apply to fires late past the threshold)

--capacity skips the measurement. --work gives each handler that much work, so that
--max-running bounds the capacity (fires/s = max-running / work) below the database's.`,
		Example: `  sundial bench overload --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable' --duration 60s
  sundial bench overload --db 'mysql://root@tcp(127.0.0.1:3306)/bench'
  sundial bench overload --ramp-from 10 --work 50ms --max-running 2 --duration 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.RampFrom <= 0 || cfg.Capacity < 0:
				return usageErrorf("--ramp-from must be positive and --capacity not negative")
			case cfg.RampStep < 100*time.Millisecond:
				return usageErrorf("--ramp-step %s: must be at least 100ms", cfg.RampStep)
			case cfg.RampHold < 100*time.Millisecond:
				return usageErrorf("--ramp-hold %s: must be at least 100ms", cfg.RampHold)
			case cfg.Factor <= 0:
				return usageErrorf("--factor %g: must be positive", cfg.Factor)
			case cfg.Interval < time.Millisecond || cfg.Duration < cfg.Interval:
				return usageErrorf("--interval must be at least 1ms and --duration at least one interval")
			case cfg.MaxDrain <= 0 || b.opts.Work < 0 || b.opts.Engine.MaxRunning < 0:
				return usageErrorf("--max-drain must be positive, --work and --max-running not negative")
			case b.opts.Processes > 0:
				return usageErrorf("--processes: the overload scenario runs its nodes in this process (use --nodes)")
			}
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				r, err := bench.Overload(ctx, opts, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&cfg.RampFrom, "ramp-from", 1000, "the capacity ramp's first demand, in fires/s (each step doubles it)")
	f.DurationVar(&cfg.RampStep, "ramp-step", 2*time.Second, "how long each step of the capacity ramp is measured")
	f.DurationVar(&cfg.RampHold, "ramp-hold", 10*time.Second, "how long the first step the nodes fall behind is held to measure the capacity")
	f.Float64Var(&cfg.Capacity, "capacity", 0, "take this capacity (fires/s) instead of measuring it")
	f.Float64Var(&cfg.Factor, "factor", 2, "the demand, as a multiple of the capacity")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "each trigger's interval")
	f.DurationVar(&cfg.Duration, "duration", time.Minute, "how long the demand lasts")
	f.DurationVar(&cfg.MaxDrain, "max-drain", 2*time.Minute, "the longest wait for the backlog to drain afterwards")
	f.DurationVar(&b.opts.Work, "work", 0, "how long each handler works")
	f.IntVar(&b.opts.Engine.MaxRunning, "max-running", 0, "handlers a node runs at once (default: the engine's)")
	return cmd
}

func newBenchScaleCmd(b *benchFlags) *cobra.Command {
	var (
		cfg    bench.ScaleConfig
		stored string
	)
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "The same firing load with 10k, 100k, 1M (or more) triggers stored: cost must stay flat",
		Long: `Bulk-load stored triggers that are not due (COPY on PostgreSQL, multi-row INSERTs
elsewhere), up to each --stored size in turn (each adds to the last), and run the same
firing load on them (--triggers firing every --interval, measured for --duration after
--warmup) on one node in a process of its own.

Per size it reports the node's per-fire cost (store statements and transactions per fire,
the node process's CPU seconds per 1,000 fires), its peak resident memory (VmHWM from
/proc), how long the node took to start (from its first line until its engine ran), the
load rate, and whether the database's plan for the due triggers' lock reads the due index
(acquire_uses_due_index) rather than every stored trigger.`,
		Example: `  sundial bench scale --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable' --stored 10000,100000,1000000,10000000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Firing < 1 || cfg.Interval < time.Millisecond || cfg.Duration <= 0 || cfg.Warmup < 0 {
				return usageErrorf("--triggers must be positive, --interval at least 1ms, --duration positive")
			}
			last := 0
			for _, s := range strings.Split(stored, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < cfg.Firing || n < last {
					return usageErrorf("--stored %q: want ascending counts, each at least --triggers", stored)
				}
				cfg.Stored, last = append(cfg.Stored, n), n
			}
			if b.opts.Processes > 0 || b.opts.Nodes > 1 {
				return usageErrorf("--processes, --nodes: the scale scenario runs one node, in a process of its own")
			}
			cfg.Progress = func(r bench.Result) { fmt.Fprintln(cmd.ErrOrStderr(), r) }
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				return bench.Scale(ctx, opts, cfg)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Firing, "triggers", 1000, "firing triggers")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "each firing trigger's interval")
	f.DurationVar(&cfg.Warmup, "warmup", 5*time.Second, "warm-up before the measured window")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured window")
	f.DurationVar(&cfg.StartTimeout, "start-timeout", 10*time.Minute, "the longest wait for the node process to start")
	f.StringVar(&stored, "stored", "10000,100000,1000000", "comma-separated, ascending numbers of stored triggers")
	return cmd
}

func newBenchBacklogCmd(b *benchFlags) *cobra.Command {
	var cfg bench.BacklogConfig
	cmd := &cobra.Command{
		Use:     "backlog",
		Short:   "K one-shot fires all due within one second: time to drain",
		Example: `  sundial bench backlog --fires 100000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Fires < 1 || cfg.MaxWait <= 0 {
				return usageErrorf("--fires and --max-wait must be positive")
			}
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				r, err := bench.Backlog(ctx, opts, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	cmd.Flags().IntVar(&cfg.Fires, "fires", 10000, "one-shot triggers (K)")
	cmd.Flags().DurationVar(&cfg.MaxWait, "max-wait", 2*time.Minute, "give up this long after the first is due")
	return cmd
}

func newBenchScheduleCmd(b *benchFlags) *cobra.Command {
	var cfg bench.ScheduleConfig
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Jobs created through the embedding API, one per transaction and all in one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Jobs < 1 {
				return usageErrorf("--jobs must be positive")
			}
			return b.run(cmd, func(ctx context.Context, opts bench.Options) ([]bench.Result, error) {
				r, err := bench.Schedule(ctx, opts, cfg)
				return []bench.Result{r}, err
			})
		},
	}
	cmd.Flags().IntVar(&cfg.Jobs, "jobs", 2000, "jobs to create each way")
	return cmd
}

func newBenchHistoryCmd(b *benchFlags) *cobra.Command {
	var cfg bench.HistoryConfig
	cmd := &cobra.Command{
		Use:   "history",
		Short: "N ended executions over 30 days: the lists, the report and one day's retention timed",
		Long: `Load N ended executions over the last --days days straight into the history (COPY on
PostgreSQL, multi-row inserts elsewhere) of an empty store, then time the console's and the
API's reads (newest, by job, by state, a fired-time hour; page 1 and a keyset page deep in
the middle), the dashboard's 30-day report, one day's report refresh and one day's
retention, and the fires/s of a steady load alone and with the next days' retention running.
On PostgreSQL it also prints the plans that show which partitions a statement reads.`,
		Example: `  sundial bench history --db 'postgres://postgres@127.0.0.1:5432/hist?sslmode=disable' --rows 10000000
  sundial bench history --db 'mysql://root@tcp(127.0.0.1:3306)/hist' --rows 1000000 --triggers 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Rows < 1 || cfg.Days < 3 || cfg.Jobs < 1 {
				return usageErrorf("--rows and --jobs must be positive, --days at least 3")
			}
			if cfg.Fire.Triggers > 0 {
				if err := checkSteady(cfg.Fire); err != nil {
					return err
				}
			}
			if b.db == "" {
				return usageErrorf("--db is required: the history scenario loads millions of rows into it")
			}
			// What was measured before an error is printed too: a load of millions of rows
			// that fails late still says how far it got.
			return runScenario(b, cmd, func(ctx context.Context, opts bench.Options) (bench.HistoryResult, error) {
				return bench.History(ctx, opts, cfg)
			}, func(bench.HistoryResult, error) bool { return true }, func(w io.Writer, r bench.HistoryResult) { fmt.Fprint(w, r) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Rows, "rows", 1000000, "ended executions to load (N)")
	f.IntVar(&cfg.Days, "days", 30, "days they span, ending today")
	f.IntVar(&cfg.Jobs, "jobs", 1000, "jobs they belong to")
	f.IntVar(&cfg.Repeat, "repeat", 5, "runs of each read (the median is printed)")
	f.BoolVar(&cfg.Reuse, "reuse", false, "keep the history already loaded (a second run)")
	f.IntVar(&cfg.Fire.Triggers, "triggers", 2000, "steady load fired alone and beside the retention (0: not measured)")
	f.DurationVar(&cfg.Fire.Interval, "interval", time.Second, "each trigger's interval")
	f.DurationVar(&cfg.Fire.Warmup, "warmup", 3*time.Second, "warm-up before the measured window")
	f.DurationVar(&cfg.Fire.Duration, "duration", 10*time.Second, "measured window")
	return cmd
}
func newBenchMapCmd(b *benchFlags) *cobra.Command {
	var cfg bench.MapConfig
	cmd := &cobra.Command{
		Use:     "map",
		Short:   "One run maps N sub-tasks over K executors (nodes sharing the store); sub-tasks/s",
		Example: `  sundial bench map --subtasks 100000 --executors 4 --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Subtasks < 1 || cfg.Executors < 1 {
				return usageErrorf("--subtasks %d --executors %d: both must be at least 1", cfg.Subtasks, cfg.Executors)
			}
			return runScenario(b, cmd, func(ctx context.Context, opts bench.Options) (bench.MapResult, error) {
				return bench.Map(ctx, opts, cfg)
			}, func(_ bench.MapResult, err error) bool { return err == nil }, func(w io.Writer, r bench.MapResult) { fmt.Fprintln(w, r) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Subtasks, "subtasks", 100000, "sub-tasks the run maps (N)")
	f.IntVar(&cfg.Executors, "executors", 4, "nodes running sub-tasks (K)")
	f.IntVar(&cfg.Workers, "workers", 64, "sub-tasks running at once per node")
	f.IntVar(&cfg.Batch, "map-batch", 500, "sub-tasks per claim and per result write")
	return cmd
}
