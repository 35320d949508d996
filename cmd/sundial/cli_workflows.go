package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/api"
)

func newWorkflowCmd() *cobra.Command {
	o := &apiOptions{}
	return group("workflow", "Manage workflows (DAGs of jobs) and their runs", o,
		newWorkflowCreateCmd(o), newWorkflowGetCmd(o), newWorkflowListCmd(o), newWorkflowRunCmd(o), newWorkflowRunsCmd(o),
		newWorkflowStatusCmd(o), newWorkflowCancelCmd(o), newWorkflowBackfillCmd(o))
}

// jsonArg reads a JSON flag's value: the text itself, or @FILE (@- for standard input).
func jsonArg(cmd *cobra.Command, flag, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	b := []byte(v)
	if v[0] == '@' {
		var err error
		if v == "@-" {
			b, err = io.ReadAll(cmd.InOrStdin())
		} else {
			b, err = os.ReadFile(v[1:])
		}
		if err != nil {
			return nil, usageErrorf("--%s: %v", flag, err)
		}
	}
	if !json.Valid(b) {
		return nil, usageErrorf("--%s: not JSON", flag)
	}
	return b, nil
}

func newWorkflowCreateCmd(o *apiOptions) *cobra.Command {
	var graph, params, desc string
	cmd := &cobra.Command{
		Use:   "create NAME --graph JSON|@FILE",
		Short: "Create a workflow",
		Long: `Create a workflow: a DAG whose nodes run jobs (by id) or decide by an expression.
The graph is {"nodes": [...], "edges": [...]}; a node is {"name", "job_id"} or
{"name", "kind": "decision", "expr"} (an expr-lang expression over params and parents), with
"on_failure": fail (default), continue or skip; an edge is {"from", "to", "when"} with when
on_success (default), on_failure, always, or true/false from a decision node. A cycle is
refused with the cycle named.`,
		Example: `  sundial workflow create etl --graph @etl.json --params '{"day":"2024-01-01"}'`,
		Args:    cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&graph, "graph", "", "the graph as JSON, or @FILE (required)")
	f.StringVar(&params, "params", "", "default params of a run (a JSON object, or @FILE)")
	f.StringVar(&desc, "description", "", "what the workflow is for")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if graph == "" {
			return usageErrorf("--graph: give the workflow's nodes and edges as JSON or @FILE")
		}
		g, err := jsonArg(cmd, "graph", graph)
		if err != nil {
			return err
		}
		p, err := jsonArg(cmd, "params", params)
		if err != nil {
			return err
		}
		w, err := c.CreateWorkflow(ctx, api.WorkflowRequest{Name: args[0], Description: desc, Graph: g, Params: p})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, w, showWorkflow)
	})
	return cmd
}

func showWorkflow(w io.Writer, wf api.Workflow) error {
	return fields(w, "ID", strconv.FormatInt(wf.ID, 10), "Name", wf.Name, "Description", wf.Description, "Graph", string(wf.Graph),
		"Params", string(wf.Params), "Updated", when(wf.UpdatedAt))
}

func newWorkflowGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "Show a workflow", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		w, err := c.GetWorkflow(ctx, args[0])
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, w, showWorkflow)
	})
	return cmd
}

func newWorkflowListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "list", Short: "List workflows", Args: cobra.NoArgs}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, c.ListWorkflows)
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID NAME DESCRIPTION UPDATED", func(w api.Workflow) []string {
			return []string{strconv.FormatInt(w.ID, 10), w.Name, w.Description, when(w.UpdatedAt)}
		})
	})
	return cmd
}

func showWorkflowRun(w io.Writer, r api.WorkflowRun) error {
	kv := []string{"Run", strconv.FormatInt(r.ID, 10), "Workflow", strconv.FormatInt(r.WorkflowID, 10), "State", r.State,
		"Message", r.Message, "Params", string(r.Params), "Cause", r.Cause, "Created", when(r.CreatedAt), "Finished", when(r.FinishedAt)}
	if r.IntervalEnd != 0 {
		kv = append(kv, "Interval", rfc(r.IntervalStart)+" .. "+rfc(r.IntervalEnd))
	}
	if r.BackfillID != 0 {
		kv = append(kv, "Backfill", strconv.FormatInt(r.BackfillID, 10))
	}
	if err := fields(w, kv...); err != nil {
		return err
	}
	if len(r.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTable(w, "NODE STATE EXECUTION RESULT MESSAGE")
	for _, n := range r.Nodes {
		exec := ""
		if n.ExecutionID != 0 {
			exec = strconv.FormatInt(n.ExecutionID, 10)
		}
		tw.row(n.Node, n.State, exec, string(n.Result), n.Message)
	}
	return tw.flush()
}

func newWorkflowRunCmd(o *apiOptions) *cobra.Command {
	var params string
	cmd := &cobra.Command{Use: "run NAME", Short: "Run a workflow now", Args: cobra.ExactArgs(1),
		Example: `  sundial workflow run etl --params '{"day":"2024-01-02"}'`}
	cmd.Flags().StringVar(&params, "params", "", "params of this run, in place of the workflow's (a JSON object, or @FILE)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		p, err := jsonArg(cmd, "params", params)
		if err != nil {
			return err
		}
		r, err := c.RunWorkflow(ctx, args[0], p)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, showWorkflowRun)
	})
	return cmd
}

func newWorkflowBackfillCmd(o *apiOptions) *cobra.Command {
	var req api.BackfillRequest
	cmd := &cobra.Command{
		Use:   "backfill NAME --from TIME --to TIME [--trigger ID] [--max-concurrent N] [--chunk N] [--dry-run]",
		Short: "Backfill a workflow: one workflow run per scheduled time of its trigger in [from, to]",
		Long: `Backfill a workflow: one run for every time its trigger's schedule gives in [--from, --to]
(RFC 3339, both included). Its trigger is that of its trigger job (handler sundial.workflow,
params the workflow's name). Each run is marked cause backfill and given its data interval,
which each node's execution gets (SUNDIAL_INTERVAL_START/END in a script). --max-concurrent
bounds the workflow runs at once. Follow it with sundial backfill get, cancel it with
sundial backfill cancel.`,
		Example: `  sundial workflow backfill etl --from 2026-03-01T00:00:00Z --to 2026-03-31T23:59:59Z --dry-run`,
		Args:    cobra.ExactArgs(1),
	}
	backfillFlags(cmd, &req, "the workflow's only one")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if req.From == "" || req.To == "" {
			return usageErrorf("give the range: --from and --to (RFC 3339)")
		}
		b, err := c.BackfillWorkflow(ctx, args[0], req)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, b, showBackfillStarted)
	})
	return cmd
}

func newWorkflowRunsCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	cmd := &cobra.Command{Use: "runs NAME", Short: "List a workflow's runs, newest first", Args: cobra.ExactArgs(1)}
	p.addFlags(cmd)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.WorkflowRun], error) {
			return c.ListWorkflowRuns(ctx, args[0], lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "RUN STATE CAUSE CREATED FINISHED MESSAGE", func(r api.WorkflowRun) []string {
			return []string{strconv.FormatInt(r.ID, 10), r.State, r.Cause, when(r.CreatedAt), when(r.FinishedAt), r.Message}
		})
	})
	return cmd
}

func newWorkflowStatusCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "status RUN_ID", Short: "Show a workflow run with each node's state and result", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("run", args[0])
		if err != nil {
			return err
		}
		r, err := c.GetWorkflowRun(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, showWorkflowRun)
	})
	return cmd
}

func newWorkflowCancelCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "cancel RUN_ID", Short: "Cancel a workflow run: its pending nodes never start", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("run", args[0])
		if err != nil {
			return err
		}
		r, err := c.CancelWorkflowRun(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, showWorkflowRun)
	})
	return cmd
}
