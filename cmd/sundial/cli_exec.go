package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

// duration is how long the run took ("" while it has not ended).
func duration(x api.Execution) string {
	if x.StartedAt.IsZero() || x.FinishedAt.IsZero() {
		return ""
	}
	return x.FinishedAt.Time().Sub(x.StartedAt.Time()).String()
}

// lateness is how long after its scheduled time the execution fired, to the millisecond
// ("" before it fired).
func lateness(x api.Execution) string {
	if x.ScheduledAt.IsZero() || x.FiredAt.IsZero() {
		return ""
	}
	return x.FiredAt.Time().Sub(x.ScheduledAt.Time()).Round(time.Millisecond).String()
}

// shard is "i/n" for a shard of a sharding-broadcast, else empty.
func shard(x api.Execution) string {
	if x.ShardTotal <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", x.ShardIndex, x.ShardTotal)
}

func newExecCmd() *cobra.Command {
	o := &apiOptions{}
	return group("exec", "Inspect executions and their output; kill and retry them", o,
		newExecListCmd(o), newExecGetCmd(o), newExecLogsCmd(o), newExecSubtasksCmd(o),
		newExecActionCmd(o, "kill", "Stop a running execution", `Stop a running execution on its executor, or on the node that runs it in process (any
node takes the request): the handler's context is canceled and the execution ends canceled.`),
		newExecActionCmd(o, "retry", "Run an ended execution again now", `Run an ended execution again now, as its next attempt (same job, trigger and shard);
prints the new execution.`))
}

func newExecListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	var job string
	var xf api.ExecutionFilter
	cmd := &cobra.Command{Use: "list", Short: "List executions, newest first", Args: cobra.NoArgs,
		Example: `  sundial exec list --job 3 --state failed --limit 20
  sundial exec list --app billing --cause retry --from 2026-01-02T00:00:00Z
  sundial exec list --executor http://10.0.0.5:9999 --state running
  sundial exec list --alarm sending   # alarms being delivered, or left so by a node that died`}
	p.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&job, "job", "", "only this job's executions: its id, NAME or GROUP/NAME")
	f.StringVar(&xf.App, "app", "", "only the executions of this app's jobs")
	f.StringVar(&xf.State, "state", "", "only this state: pending, acquired, running, succeeded, failed, timed_out, lost, skipped, canceled")
	f.StringVar(&xf.Cause, "cause", "", "only this cause: schedule, manual, api, retry, misfire, recovery, child, backfill")
	f.StringVar(&xf.Executor, "executor", "", "only executions sent to the executor at this address")
	f.StringVar(&xf.AlarmState, "alarm", "", "only executions whose alarm is none, pending, sending (claimed and not recorded: being delivered, "+
		"or left by a node that died; sent again after the resend delay), sent or failed")
	f.StringVar(&xf.Order, "order", "", "desc (newest first, the default) or asc")
	f.StringVar(&xf.From, "from", "", "fired at or after this time (RFC 3339)")
	f.StringVar(&xf.To, "to", "", "fired before this time (RFC 3339)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		f := xf
		if job != "" {
			id, err := jobRef(ctx, c, job)
			if err != nil {
				return err
			}
			f.JobID = id
		}
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Execution], error) {
			return c.ListExecutions(ctx, f, lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID JOB TRIGGER STATE CAUSE ATTEMPT SCHEDULED FIRED LATE DURATION MESSAGE",
			func(x api.Execution) []string {
				msg := x.HandleMsg
				if msg == "" {
					msg = x.TriggerMsg
				}
				trig := ""
				if x.TriggerID != 0 {
					trig = itoa(x.TriggerID)
				}
				return []string{itoa(x.ID), itoa(x.JobID), trig, x.State, x.Cause, strconv.Itoa(x.Attempt),
					when(x.ScheduledAt), when(x.FiredAt), lateness(x), duration(x), msg}
			})
	})
	return cmd
}

func newExecGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show an execution", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		x, err := c.GetExecution(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, x, func(w io.Writer, x api.Execution) error {
			return fields(w, "ID", itoa(x.ID), "Job", itoa(x.JobID), "Trigger", itoa(x.TriggerID), "State", x.State,
				"Cause", x.Cause, "Attempt", strconv.Itoa(x.Attempt), "Node", x.Node, "Scheduled", when(x.ScheduledAt),
				"Fired", when(x.FiredAt), "Late", lateness(x), "Started", when(x.StartedAt), "Finished", when(x.FinishedAt),
				"Duration", duration(x), "Code", strconv.Itoa(x.HandleCode), "Message", x.HandleMsg, "Trigger message", x.TriggerMsg,
				"Executor", x.ExecutorAddress, "Shard", shard(x), "Script version", scriptVersion(x.ScriptVersion),
				"Params", runParams(x.Params), "Output", outputCut(x.OutputLost), "Interval", interval(x),
				"Backfill", itoa(x.BackfillID))
		})
	})
	return cmd
}

// interval shows a run's data interval exactly ("" for a run no schedule made).
func interval(x api.Execution) string {
	if x.IntervalEnd.IsZero() {
		return ""
	}
	return rfc(x.IntervalStart) + " .. " + rfc(x.IntervalEnd)
}

// outputCut says a run's output is cut ("" when it is whole).
func outputCut(lost int64) string {
	if lost == 0 {
		return ""
	}
	return fmt.Sprintf("cut: %d line(s) never reached the server", lost)
}

// scriptVersion names the script version a run was given ("" for a job without a script).
func scriptVersion(v int64) string {
	if v == 0 {
		return ""
	}
	return "v" + itoa(v)
}

// runParams shows a run's own params, or that it got the job's.
func runParams(p string) string {
	if p == "" {
		return "(the job's)"
	}
	return p
}

func newExecLogsCmd(o *apiOptions) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs ID [-f]",
		Short: "Print an execution's output",
		Long: `Print an execution's output lines. With -f, keep printing new lines until the execution
ends (its final state goes to standard error) or Ctrl-C. With -o json, -f prints each event's
JSON on its own line: the lines, then the execution as it ended.`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the output until the execution ends")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		if follow {
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			return followLogs(ctx, c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), o.output)
		}
		all := pageOptions{all: true, limit: 1000}
		l, err := list(ctx, &all, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.LogLine], error) {
			return c.ExecutionOutput(ctx, id, lo)
		})
		if err != nil {
			return err
		}
		if o.machine() {
			return o.encode(cmd.OutOrStdout(), l)
		}
		for _, ln := range l.Items {
			printLogLine(cmd.OutOrStdout(), ln)
		}
		return nil
	})
	return cmd
}

func printLogLine(w io.Writer, ln api.LogLine) {
	fmt.Fprintf(w, "%s  %s\n", ln.At.Time().Local().Format("2006-01-02 15:04:05.000"), termSafe(ln.Message))
}

// followLogs follows the output until the end event or ctx ends. A stream that drops (a
// server restarting) is resumed after the last line seen.
func followLogs(ctx context.Context, c *api.Client, id int64, stdout, stderr io.Writer, output string) error {
	var after int64
	for {
		ended, err := c.FollowOutput(ctx, id, after, func(ev api.OutputEvent) error {
			if ev.Line != nil {
				after = ev.Line.Line
			}
			switch {
			case output == "json":
				_, err := fmt.Fprintf(stdout, "%s\n", ev.Data)
				return err
			case output == "yaml":
				fmt.Fprintln(stdout, "---")
				return writeYAML(stdout, ev.Data)
			case ev.Line != nil:
				printLogLine(stdout, *ev.Line)
			case ev.End != nil:
				fmt.Fprintf(stderr, "execution %d %s %s\n", ev.End.ID, ev.End.State, termSafe(ev.End.HandleMsg))
			}
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return nil // Ctrl-C
		case err != nil:
			return err
		case ended:
			return nil
		}
		// The server closed the stream before the end (it is shutting down): resume.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func newExecSubtasksCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	var state string
	cmd := &cobra.Command{Use: "subtasks ID", Short: "List a map/reduce run's sub-tasks, with their counts by state", Args: cobra.ExactArgs(1),
		Example: `  sundial exec subtasks 42
  sundial exec subtasks 42 --state failed --all -o json`}
	p.addFlags(cmd)
	cmd.Flags().StringVar(&state, "state", "", "only this state: pending, running, succeeded, failed, canceled")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		var counts map[string]int64
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Subtask], error) {
			pg, err := c.ListSubtasks(ctx, id, state, lo)
			if err != nil {
				return nil, err
			}
			counts = pg.Counts
			return &pg.Page, nil
		})
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if o.machine() {
			return o.encode(w, api.SubtaskPage{Page: l, Counts: counts})
		}
		var b []string
		for _, st := range []string{"pending", "running", "succeeded", "failed", "canceled"} {
			if n := counts[st]; n > 0 {
				b = append(b, fmt.Sprintf("%s %d", st, n))
			}
		}
		if len(b) == 0 {
			b = []string{"none"}
		}
		fmt.Fprintf(w, "sub-tasks of execution %d: %s\n", id, strings.Join(b, ", "))
		return printList(w, o, l, "ID PARENT DEPTH STATE ATTEMPT OWNER PAYLOAD RESULT MESSAGE", func(st api.Subtask) []string {
			parent := ""
			if st.ParentID != 0 {
				parent = itoa(st.ParentID)
			}
			return []string{itoa(st.ID), parent, strconv.Itoa(st.Depth), st.State, fmt.Sprintf("%d/%d", st.Attempt, st.MaxAttempts),
				st.Owner, clip(string(st.Payload)), clip(string(st.Result)), st.Message}
		})
	})
	return cmd
}

// clip shortens a JSON value for a table cell.
func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
