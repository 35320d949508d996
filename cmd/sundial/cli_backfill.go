package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

// newBackfillCmd is `sundial backfill`: run a job for every scheduled time of a past range.
func newBackfillCmd() *cobra.Command {
	o := &apiOptions{}
	return group("backfill", "Run a job for every scheduled time of a past range, and follow or cancel it", o,
		newBackfillRunCmd(o), newBackfillListCmd(o), newBackfillGetCmd(o), newBackfillCancelCmd(o))
}

func newBackfillRunCmd(o *apiOptions) *cobra.Command {
	var req api.BackfillRequest
	cmd := &cobra.Command{
		Use:   "run JOB --from TIME --to TIME [--trigger ID] [--max-concurrent N] [--chunk N] [--dry-run]",
		Short: "Backfill a job: one run per scheduled time of its trigger in [from, to]",
		Long: `Backfill a job: one run for every time its trigger's schedule and calendar give in
[--from, --to] (RFC 3339, both included), each marked cause backfill and given its data
interval (the scheduled time before and its own; SUNDIAL_INTERVAL_START/END in a script).
--max-concurrent bounds the runs at once (default 1: one after another); --chunk N makes
each run cover N consecutive times. --dry-run lists the runs and stores nothing.`,
		Example: `  sundial backfill run reports/daily --from 2026-03-01T00:00:00Z --to 2026-03-31T23:59:59Z --dry-run
  sundial backfill run 7 --from 2026-03-01T00:00:00Z --to 2026-03-02T00:00:00Z --max-concurrent 4`,
		Args: cobra.ExactArgs(1),
	}
	backfillFlags(cmd, &req, "the job's only one")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if req.From == "" || req.To == "" {
			return usageErrorf("give the range: --from and --to (RFC 3339)")
		}
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		b, err := c.Backfill(ctx, id, req)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, b, showBackfillStarted)
	})
	return cmd
}

// backfillFlags are the flags of a backfill's range and pace (sundial backfill run, sundial
// workflow backfill).
func backfillFlags(cmd *cobra.Command, req *api.BackfillRequest, onlyTrigger string) {
	f := cmd.Flags()
	f.StringVar(&req.From, "from", "", "the range's first instant, RFC 3339 (required)")
	f.StringVar(&req.To, "to", "", "the range's last instant, RFC 3339 (required)")
	f.Int64Var(&req.Trigger, "trigger", 0, "the trigger whose schedule gives the times (default "+onlyTrigger+")")
	f.IntVar(&req.MaxConcurrent, "max-concurrent", 1, "runs at once (1..100)")
	f.IntVar(&req.Chunk, "chunk", 1, "consecutive scheduled times one run covers")
	f.BoolVar(&req.DryRun, "dry-run", false, "list the runs without storing anything")
}

// showBackfillStarted shows a dry run's plan, or the backfill started.
func showBackfillStarted(w io.Writer, b api.Backfill) error {
	if b.ID == 0 {
		t := newTable(w, "RUN INTERVAL-START INTERVAL-END TIMES")
		for i, r := range b.Plan {
			t.row(strconv.Itoa(i+1), rfc(r.IntervalStart), rfc(r.IntervalEnd), strconv.Itoa(len(r.Times)))
		}
		if err := t.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "dry run: %d scheduled times in %d runs; nothing stored\n", b.Total, len(b.Plan))
		return err
	}
	of := fmt.Sprintf("job %d", b.JobID)
	if b.Workflow != "" {
		of = fmt.Sprintf("workflow %s (trigger job %d)", b.Workflow, b.JobID)
	}
	_, err := fmt.Fprintf(w, "Started backfill %d of %s: %d scheduled times, at most %d at once; follow it with: sundial backfill get %d\n",
		b.ID, of, b.Total, b.MaxConcurrent, b.ID)
	return err
}

func newBackfillListCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "list JOB", Short: "List a job's backfills, newest first", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		bs, err := c.ListBackfills(ctx, id)
		if err != nil {
			return err
		}
		if o.machine() {
			return o.encode(cmd.OutOrStdout(), bs)
		}
		t := newTable(cmd.OutOrStdout(), "ID STATE FROM TO RUNS-MADE TIMES MAX-CONCURRENT CHUNK BY")
		for _, b := range bs {
			t.row(strconv.FormatInt(b.ID, 10), b.State, rfc(b.From), rfc(b.To), strconv.FormatInt(b.Created, 10),
				strconv.FormatInt(b.Total, 10), strconv.Itoa(b.MaxConcurrent), strconv.Itoa(b.Chunk), b.CreatedBy)
		}
		return t.flush()
	})
	return cmd
}

func newBackfillGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show a backfill's progress", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("backfill", args[0])
		if err != nil {
			return err
		}
		b, err := c.GetBackfill(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, b, showBackfill)
	})
	return cmd
}

func newBackfillCancelCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "cancel ID", Short: "Cancel a backfill: no further run; its runs not started are canceled", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("backfill", args[0])
		if err != nil {
			return err
		}
		b, err := c.CancelBackfill(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, b, showBackfill)
	})
	return cmd
}

func showBackfill(w io.Writer, b api.Backfill) error {
	_, err := fmt.Fprintf(w, "backfill %d of job %d (trigger %d): %s\nrange:  %s .. %s\nruns:   %d of %d scheduled times made, at most %d at once, %d per run\nby:     %s\n",
		b.ID, b.JobID, b.TriggerID, b.State, rfc(b.From), rfc(b.To), b.Created, b.Total, b.MaxConcurrent, b.Chunk, b.CreatedBy)
	return err
}

// rfc shows an instant of a backfill exactly, as RFC 3339 in UTC: its range is given so.
func rfc(t api.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Time().UTC().Format(time.RFC3339)
}
