package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// execView is an execution as the API returns it.
type execView struct {
	ID          int64   `json:"id"`
	JobID       int64   `json:"job_id"`
	TriggerID   int64   `json:"trigger_id"`
	ScheduledAt apiTime `json:"scheduled_at"`
	FiredAt     apiTime `json:"fired_at"`
	Cause       string  `json:"cause"`
	Attempt     int     `json:"attempt"`
	Node        string  `json:"node"`
	State       string  `json:"state"`
	HandleCode  int     `json:"handle_code"`
	HandleMsg   string  `json:"handle_msg"`
	TriggerMsg  string  `json:"trigger_msg"`
	StartedAt   apiTime `json:"started_at"`
	FinishedAt  apiTime `json:"finished_at"`
	// ExecutorAddress, ShardIndex and ShardTotal are set for runs on executors.
	ExecutorAddress string `json:"executor_address"`
	ShardIndex      int    `json:"shard_index"`
	ShardTotal      int    `json:"shard_total"`
}

func (x execView) duration() string {
	if x.StartedAt.IsZero() || x.FinishedAt.IsZero() {
		return ""
	}
	return x.FinishedAt.Sub(x.StartedAt.Time).String()
}

// shard is "i/n" for a shard of a sharding-broadcast, else empty.
func (x execView) shard() string {
	if x.ShardTotal <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", x.ShardIndex, x.ShardTotal)
}

type logLineView struct {
	Line    int64   `json:"line"`
	At      apiTime `json:"at"`
	Message string  `json:"message"`
}

func newExecCmd() *cobra.Command {
	o := &apiOptions{}
	return group("exec", "Inspect executions and their output; kill and retry them", o,
		newExecListCmd(o), newExecGetCmd(o), newExecLogsCmd(o),
		newExecActionCmd(o, "kill", "Stop a run on its executor", `Stop a running execution on its executor: the handler's context is canceled and the
execution ends canceled. Only runs on executors (remote jobs) can be killed.`),
		newExecActionCmd(o, "retry", "Run an ended execution again now", `Run an ended execution again now, as its next attempt (same job, trigger and shard);
prints the new execution.`))
}

func newExecListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	var job int64
	var state, order, from, to string
	cmd := &cobra.Command{Use: "list", Short: "List executions, newest first", Args: cobra.NoArgs,
		Example: `  sundial exec list --job 3 --state failed --limit 20`}
	p.addFlags(cmd)
	f := cmd.Flags()
	f.Int64Var(&job, "job", 0, "only this job's executions")
	f.StringVar(&state, "state", "", "only this state: pending, acquired, running, succeeded, failed, timed_out, lost, skipped, canceled")
	f.StringVar(&order, "order", "", "desc (newest first, the default) or asc")
	f.StringVar(&from, "from", "", "fired at or after this time (RFC 3339)")
	f.StringVar(&to, "to", "", "fired before this time (RFC 3339)")
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		q := url.Values{}
		if job != 0 {
			q.Set("job_id", itoa(job))
		}
		for k, v := range map[string]string{"state": state, "order": order, "from": from, "to": to} {
			if v != "" {
				q.Set(k, v)
			}
		}
		l, err := p.list(ctx, c, "/api/v1/executions", q)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID JOB TRIGGER STATE CAUSE ATTEMPT FIRED DURATION MESSAGE",
			func(x execView) []string {
				msg := x.HandleMsg
				if msg == "" {
					msg = x.TriggerMsg
				}
				trig := ""
				if x.TriggerID != 0 {
					trig = itoa(x.TriggerID)
				}
				return []string{itoa(x.ID), itoa(x.JobID), trig, x.State, x.Cause, strconv.Itoa(x.Attempt),
					x.FiredAt.String(), x.duration(), msg}
			})
	})
	return cmd
}

func newExecGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show an execution", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		body, err := c.do(ctx, "GET", idPath("/api/v1/executions", id, ""), nil, nil)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, body, func(w io.Writer, x execView) error {
			return fields(w, "ID", itoa(x.ID), "Job", itoa(x.JobID), "Trigger", itoa(x.TriggerID), "State", x.State,
				"Cause", x.Cause, "Attempt", strconv.Itoa(x.Attempt), "Node", x.Node, "Scheduled", x.ScheduledAt.String(),
				"Fired", x.FiredAt.String(), "Started", x.StartedAt.String(), "Finished", x.FinishedAt.String(),
				"Duration", x.duration(), "Code", strconv.Itoa(x.HandleCode), "Message", x.HandleMsg, "Trigger message", x.TriggerMsg,
				"Executor", x.ExecutorAddress, "Shard", x.shard())
		})
	})
	return cmd
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
	cmd.RunE = o.run(func(ctx context.Context, c *apiClient, cmd *cobra.Command, args []string) error {
		id, err := parseID("execution", args[0])
		if err != nil {
			return err
		}
		path := idPath("/api/v1/executions", id, "/output")
		if follow {
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			return followLogs(ctx, c, path, cmd.OutOrStdout(), cmd.ErrOrStderr(), o.json())
		}
		all := pageOptions{all: true, limit: 1000}
		l, err := all.list(ctx, c, path, nil)
		if err != nil {
			return err
		}
		if o.json() {
			return writeJSON(cmd.OutOrStdout(), l)
		}
		for _, raw := range l.Items {
			var ln logLineView
			if err := json.Unmarshal(raw, &ln); err != nil {
				return fmt.Errorf("decode output line %s: %w", raw, err)
			}
			printLogLine(cmd.OutOrStdout(), ln)
		}
		return nil
	})
	return cmd
}

func printLogLine(w io.Writer, ln logLineView) {
	fmt.Fprintf(w, "%s  %s\n", ln.At.Local().Format("2006-01-02 15:04:05.000"), termSafe(ln.Message))
}

// followLogs reads the server-sent events of ?follow=true until the "end" event or ctx ends.
// A stream that drops (a server restarting) is resumed after the last line seen.
func followLogs(ctx context.Context, c *apiClient, path string, stdout, stderr io.Writer, asJSON bool) error {
	var after int64
	for {
		q := url.Values{"follow": {"true"}}
		if after > 0 {
			q.Set("after", itoa(after))
		}
		resp, err := c.send(ctx, "GET", path, q, nil, "text/event-stream")
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			return err
		}
		ended, err := readEvents(resp.Body, func(event string, data []byte) error {
			if asJSON {
				return writeRaw(stdout, data)
			}
			switch event {
			case "line":
				var ln logLineView
				if err := json.Unmarshal(data, &ln); err != nil {
					return fmt.Errorf("decode output line %s: %w", data, err)
				}
				printLogLine(stdout, ln)
				after = ln.Line
			case "end":
				var x execView
				if err := json.Unmarshal(data, &x); err != nil {
					return fmt.Errorf("decode end event %s: %w", data, err)
				}
				fmt.Fprintf(stderr, "execution %d %s %s\n", x.ID, x.State, termSafe(x.HandleMsg))
			}
			return nil
		}, &after)
		resp.Body.Close()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("GET %s: %w", path, err)
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

// readEvents parses a text/event-stream, calling fn for each event and keeping *lastID at
// the last "id:" seen. It reports whether an "end" event arrived.
func readEvents(r io.Reader, fn func(event string, data []byte) error, lastID *int64) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // one output line can be long
	var event string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data == nil {
				continue
			}
			if err := fn(event, data); err != nil {
				return false, err
			}
			if event == "end" {
				return true, nil
			}
			event, data = "", nil
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		case strings.HasPrefix(line, "id:"):
			if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "id:")), 10, 64); err == nil {
				*lastID = n
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return false, err
	}
	return false, nil
}
