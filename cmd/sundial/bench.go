package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/internal/bench"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run Sundial's performance scenarios against a store",
	}
	cmd.AddCommand(newBenchSteadyCmd())
	return cmd
}

func newBenchSteadyCmd() *cobra.Command {
	var (
		db, output, prof string
		logLevel         slog.Level
		cfg              bench.SteadyConfig
		batch            int
		lookAhead        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "steady",
		Short: "M triggers each firing every I: fires/s, lateness, misfires, duplicates, missing fires",
		Example: `  sundial bench steady --triggers 10000 --interval 1s --duration 20s
  sundial bench steady --db 'postgres://postgres@127.0.0.1:5432/bench?sslmode=disable' --nodes 2 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Triggers < 1 || cfg.Interval < time.Millisecond || cfg.Duration <= 0 || cfg.Nodes < 1 {
				return usageErrorf("--triggers, --interval (>= 1ms), --duration and --nodes must be positive")
			}
			if output != "table" && output != "json" {
				return usageErrorf("-o %q: want table or json", output)
			}
			ctx := cmd.Context()
			if db == "" {
				dir, err := os.MkdirTemp("", "sundial-bench")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				db = filepath.Join(dir, "bench.db")
			}
			open := func() (store.Store, error) { return sqlstore.Open(ctx, db) }
			st, err := sqlstore.Open(ctx, db)
			if err != nil {
				return err
			}
			err = st.Migrate(ctx)
			st.Close()
			if err != nil {
				return err
			}
			cfg.Engine.BatchSize, cfg.Engine.LookAhead = batch, lookAhead
			if prof != "" {
				f, err := os.Create(prof)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: logLevel}))
			res, err := bench.Steady(ctx, open, cfg)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintln(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", "store DSN (default: a fresh SQLite file in a temporary directory)")
	f.IntVar(&cfg.Triggers, "triggers", 10000, "number of triggers (M)")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "each trigger's interval (I)")
	f.DurationVar(&cfg.Warmup, "warmup", 5*time.Second, "warm-up before the measured window")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured window (D)")
	f.IntVar(&cfg.Nodes, "nodes", 1, "engines sharing the store, in this process")
	f.IntVar(&batch, "batch", 0, "engine acquisition batch size (default: the engine's)")
	f.DurationVar(&lookAhead, "look-ahead", 0, "engine look-ahead window (default: the engine's)")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.StringVar(&prof, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.TextVar(&logLevel, "log-level", slog.LevelWarn, "engine log level (debug, info, warn, error), on standard error")
	return cmd
}
