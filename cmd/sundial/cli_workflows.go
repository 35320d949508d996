package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial/api"
)

func newWorkflowCmd() *cobra.Command {
	o := &apiOptions{}
	return group("workflow", "Manage workflows (DAGs of jobs) and their runs", o,
		newWorkflowCreateCmd(o), newWorkflowGetCmd(o), newWorkflowListCmd(o), newWorkflowUpdateCmd(o), newWorkflowDeleteCmd(o),
		newWorkflowRunCmd(o), newWorkflowRunsCmd(o), newWorkflowStatusCmd(o), newWorkflowCancelCmd(o), newWorkflowBackfillCmd(o))
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

// addOverlapFlags adds a workflow's overlap policy flags, named and checked as a job's.
func addOverlapFlags(f *pflag.FlagSet, ov *api.WorkflowOverlap) {
	f.StringVar(&ov.Concurrency, "concurrency", "", "overlap policy, when a run starts while earlier runs of the workflow run: allow, skip, "+
		"buffer_one, buffer_all, cancel, terminate or at_most (old names: serial, discard, replace)")
	f.IntVar(&ov.MaxConcurrent, "max-concurrent", 0, "with --concurrency at_most: how many runs at once, across the cluster (1 to 1000)")
}

func newWorkflowCreateCmd(o *apiOptions) *cobra.Command {
	var graph, params, desc string
	var ov api.WorkflowOverlap
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
	addOverlapFlags(f, &ov)
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
		w, err := c.CreateWorkflow(ctx, api.WorkflowRequest{Name: args[0], Description: desc, Graph: g, Params: p, WorkflowOverlap: ov})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, w, showWorkflow)
	})
	return cmd
}

func showWorkflow(w io.Writer, wf api.Workflow) error {
	return fields(w, "ID", strconv.FormatInt(wf.ID, 10), "Name", wf.Name, "Description", wf.Description, "Graph", string(wf.Graph),
		"Params", string(wf.Params), "Overlap", overlapText(wf.WorkflowOverlap), "Updated", when(wf.UpdatedAt))
}

func overlapText(ov api.WorkflowOverlap) string {
	switch {
	case ov.Concurrency == "":
		return "allow"
	case ov.MaxConcurrent != 0:
		return ov.Concurrency + " " + strconv.Itoa(ov.MaxConcurrent)
	}
	return ov.Concurrency
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
	if r.ParentRunID != 0 {
		kv = append(kv, "Parent", fmt.Sprintf("run %d, node %s", r.ParentRunID, r.ParentNode))
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
		switch {
		case n.ExecutionID != 0:
			exec = strconv.FormatInt(n.ExecutionID, 10)
		case n.ChildRunID != 0: // a sub-workflow node: its run (sundial workflow run show ID)
			exec = fmt.Sprintf("run %d", n.ChildRunID)
		}
		tw.row(n.Node, n.State, exec, string(n.Result), n.Message)
	}
	return tw.flush()
}

func newWorkflowRunCmd(o *apiOptions) *cobra.Command {
	var params string
	cmd := &cobra.Command{Use: "run NAME", Short: "Run a workflow now; or act on a run (retry, retry-node, mark-succeeded, cancel)",
		Long: `Run a workflow now, with params in place of the workflow's own. The subcommands act on a
run: retry (from its failed nodes), retry-node, mark-succeeded and cancel. (A workflow named
like one of them is run with "sundial workflow run -- NAME".)`,
		Args: cobra.ExactArgs(1),
		Example: `  sundial workflow run etl --params '{"day":"2024-01-02"}'
  sundial workflow run retry 42
  sundial workflow run retry-node 42 load
  sundial workflow run mark-succeeded 42 load --result '{"rows":0}'
  sundial workflow run cancel 42`}
	cmd.AddCommand(newWorkflowRunRetryCmd(o), newWorkflowRunRetryNodeCmd(o), newWorkflowRunMarkCmd(o), newWorkflowCancelCmd(o))
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
	cmd := &cobra.Command{Use: "cancel RUN_ID", Short: "Cancel a workflow run: its pending nodes never start, its running ones are killed", Args: cobra.ExactArgs(1)}
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

func newWorkflowUpdateCmd(o *apiOptions) *cobra.Command {
	var graph, params, desc string
	var version int64
	var ov api.WorkflowOverlap
	cmd := &cobra.Command{
		Use:   "update NAME --graph JSON|@FILE",
		Short: "Replace a workflow's graph, params and description",
		Long: `Replace a workflow's graph, params and description (see create). Runs that have started
keep the graph they started with. With --version, the update is refused (exit 1, 409) when
the workflow is no longer at that version. Without --concurrency the workflow's overlap
policy stays as it is.`,
		Example: `  sundial workflow update etl --graph @etl.json --version 3`,
		Args:    cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&graph, "graph", "", "the graph as JSON, or @FILE (required)")
	f.StringVar(&params, "params", "", "default params of a run (a JSON object, or @FILE)")
	f.StringVar(&desc, "description", "", "what the workflow is for")
	f.Int64Var(&version, "version", 0, "the version the update replaces (0: whatever is current)")
	addOverlapFlags(f, &ov)
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
		if !f.Changed("concurrency") && !f.Changed("max-concurrent") {
			cur, err := c.GetWorkflow(ctx, args[0])
			if err != nil {
				return err
			}
			ov = cur.WorkflowOverlap
		}
		w, err := c.UpdateWorkflow(ctx, args[0], api.WorkflowUpdate{Description: desc, Graph: g, Params: p, Version: version, WorkflowOverlap: ov})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, w, showWorkflow)
	})
	return cmd
}

func newWorkflowDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete a workflow with no running run; its runs stay as history", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		if err := c.DeleteWorkflow(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workflow %s deleted\n", args[0])
		return nil
	})
	return cmd
}

// runOp is a subcommand of "workflow run" acting on run RUN_ID (and a node, for nodeArg).
func runOp(o *apiOptions, use, short string, nodeArg bool, do func(ctx context.Context, c *api.Client, id int64, node string) (*api.WorkflowRun, error)) *cobra.Command {
	n := 1
	if nodeArg {
		n = 2
	}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(n)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("run", args[0])
		if err != nil {
			return err
		}
		node := ""
		if nodeArg {
			node = args[1]
		}
		r, err := do(ctx, c, id, node)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, showWorkflowRun)
	})
	return cmd
}

func newWorkflowRunRetryCmd(o *apiOptions) *cobra.Command {
	return runOp(o, "retry RUN_ID", "Retry a run from its failed nodes (each node that failed or was canceled runs again)", false,
		func(ctx context.Context, c *api.Client, id int64, _ string) (*api.WorkflowRun, error) {
			return c.RetryWorkflowRun(ctx, id)
		})
}

func newWorkflowRunRetryNodeCmd(o *apiOptions) *cobra.Command {
	return runOp(o, "retry-node RUN_ID NODE", "Run one node of a run again (a node that failed or was canceled)", true,
		func(ctx context.Context, c *api.Client, id int64, node string) (*api.WorkflowRun, error) {
			return c.RetryWorkflowNode(ctx, id, node)
		})
}

func newWorkflowRunMarkCmd(o *apiOptions) *cobra.Command {
	var result string
	cmd := runOp(o, "mark-succeeded RUN_ID NODE", "Record a node that has not succeeded as succeeded; its children run", true, nil)
	cmd.Flags().StringVar(&result, "result", "", "the node's result its children are given (JSON, or @FILE)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("run", args[0])
		if err != nil {
			return err
		}
		res, err := jsonArg(cmd, "result", result)
		if err != nil {
			return err
		}
		r, err := c.MarkWorkflowNodeSucceeded(ctx, id, args[1], res)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, r, showWorkflowRun)
	})
	return cmd
}
