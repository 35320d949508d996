package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// Sub-workflows. A node of kind workflow starts a run of the workflow it names (its child
// run, linked both ways: the node's ChildRun, the run's ParentNode) in the transaction that
// moves the node to running, so a node attempt starts one child run, never two and never
// none. The child run's end is recorded as the node's end in the transaction that ends the
// child: succeeded with the sinks' results (workflow.Graph.SubWorkflowResult), or failed by
// the node's on_failure.
//
// Lock order: a transaction that touches a run locks the run's ancestors first, every run in
// ascending id order (a child run is always inserted after its parent, so its id is larger).
// Two transactions touching the same tree of runs then meet at its root run and cannot
// deadlock, whichever end (a grandchild's node, a cancel of the root) each began with.

// lockRuns locks the runs ids and their ancestors in ascending id order and returns the
// locked runs by id (a run that does not exist is left out).
func lockRuns(ctx context.Context, q store.Querier, ids []int64) (map[int64]*store.WorkflowRun, error) {
	all := slices.Clone(ids)
	for _, id := range ids {
		up, err := ancestors(ctx, q, id)
		if err != nil {
			return nil, err
		}
		all = append(all, up...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := make(map[int64]*store.WorkflowRun, len(all))
	for _, id := range all {
		run, err := q.WorkflowRunLock(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("lock workflow run %d: %w", id, err)
		}
		out[id] = run
	}
	return out, nil
}

// ancestors returns the runs above run id (its parent's run, that one's, ...), read without
// locks: a run's parent never changes.
func ancestors(ctx context.Context, q store.Querier, id int64) ([]int64, error) {
	var out []int64
	for depth := 0; depth <= maxSubDepth; depth++ {
		run, err := q.WorkflowRunGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if run.ParentNode == 0 {
			return out, nil
		}
		ns, err := q.WorkflowNodesGet(ctx, []int64{run.ParentNode})
		if err != nil {
			return nil, err
		}
		if len(ns) == 0 {
			return out, nil // the node was retried: this run is history
		}
		id = ns[0].RunID
		out = append(out, id)
	}
	return out, nil
}

// maxSubDepth bounds how deep sub-workflows nest at run time. Recursion is refused when a
// workflow is stored (CheckSubWorkflows); this bound holds even when two edits raced past it.
const maxSubDepth = 32

// CheckSubWorkflows refuses a graph, to be stored as workflow name, whose sub-workflow nodes
// name a workflow that does not exist or lead back to a workflow on their path (through the
// stored workflows, with name's graph taken as g): a *schedule.FieldError naming the node's
// workflow field and, for recursion, the path (A -> B -> A).
func CheckSubWorkflows(ctx context.Context, q store.Querier, name string, g *workflow.Graph) error {
	graphs := map[string]*workflow.Graph{name: g}
	load := func(n string) (*workflow.Graph, error) {
		if sg, ok := graphs[n]; ok {
			return sg, nil
		}
		w, err := q.WorkflowGetByName(ctx, n)
		if err != nil {
			return nil, err
		}
		sg, err := ParseGraph(w.Graph)
		if err != nil {
			return nil, fmt.Errorf("workflow %s: %w", n, err)
		}
		graphs[n] = sg
		return sg, nil
	}
	// A depth-first walk of the references from name; done holds the workflows whose
	// references were all walked without meeting the path.
	done := map[string]bool{}
	var walk func(path []string) error
	walk = func(path []string) error {
		cur := path[len(path)-1]
		sg, err := load(cur)
		if err != nil {
			return err
		}
		_, subs := sg.SubWorkflows()
		for _, s := range subs {
			if slices.Contains(path, s) {
				return &workflow.RecursionError{Path: append(slices.Clone(path), s)}
			}
			if done[s] {
				continue
			}
			if err := walk(append(path, s)); err != nil {
				return err
			}
		}
		done[cur] = true
		return nil
	}
	idx, subs := g.SubWorkflows()
	for i, s := range subs {
		field := fmt.Sprintf("nodes[%d].workflow", idx[i])
		if s == name {
			return schedule.Fieldf(field, "recursion: %s -> %s", name, s)
		}
		err := walk([]string{name, s})
		var rec *workflow.RecursionError
		switch {
		case errors.As(err, &rec):
			return &schedule.FieldError{Field: field, Err: rec}
		case errors.Is(err, store.ErrNotFound):
			return schedule.Fieldf(field, "workflow %q does not exist (%v)", s, err)
		case err != nil:
			return err
		}
	}
	return nil
}

// subWorkflowApps adds to apps the apps of the jobs of the workflows g's sub-workflow nodes
// run, through every level: running a workflow runs them too. A workflow that does not exist
// adds none: one deleted after it was referenced must leave the workflows naming it readable
// and repairable (their node fails when it runs); writing a reference to a missing workflow is
// refused by CheckSubWorkflows. seen stops a (refused, but maybe raced) cycle.
func subWorkflowApps(ctx context.Context, q store.Querier, g *workflow.Graph, apps []string, seen map[string]bool) ([]string, error) {
	idx, subs := g.SubWorkflows()
	for i, s := range subs {
		if seen[s] {
			continue
		}
		seen[s] = true
		w, err := q.WorkflowGetByName(ctx, s)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sg, err := ParseGraph(w.Graph)
		if err != nil {
			return nil, fmt.Errorf("workflow %s: %w", s, err)
		}
		more, err := workflowApps(ctx, q, sg, seen)
		if err != nil {
			var fe *schedule.FieldError
			if errors.As(err, &fe) {
				return nil, schedule.Fieldf(fmt.Sprintf("nodes[%d].workflow", idx[i]), "in workflow %s: %v", s, fe)
			}
			return nil, err
		}
		for _, a := range more {
			if !slices.Contains(apps, a) {
				apps = append(apps, a)
			}
		}
	}
	return apps, nil
}

// startChild starts the child run of sub-workflow node n (inserted running, with its ID) of
// run, with n's input, in tx, and links it (n.ChildRun, written by the caller's update of n).
// When the child cannot start (its workflow is gone, or it would nest too deep or recur) or
// ends at once, n is given its end here (state, result, message): ended reports so.
func (e *Engine) startChild(ctx context.Context, tx store.Querier, run *store.WorkflowRun, spec workflow.Node, n *store.WorkflowNode,
	in WorkflowInput, now time.Time) (ended bool, err error) {
	fail := func(msg string) (bool, error) {
		st, _ := spec.Outcome(false)
		n.State, n.Message = string(st), msg
		return true, nil
	}
	w, err := tx.WorkflowGetByName(ctx, spec.Workflow)
	if errors.Is(err, store.ErrNotFound) {
		return fail(fmt.Sprintf("workflow %s does not exist", spec.Workflow))
	}
	if err != nil {
		return false, err
	}
	g, err := ParseGraph(w.Graph)
	if err != nil {
		return fail(fmt.Sprintf("workflow %s: %v", w.Name, err))
	}
	// The stored workflows are checked for recursion when written; two edits racing could
	// still make one, so the run's own ancestry is checked too.
	up, err := ancestors(ctx, tx, run.ID)
	if err != nil {
		return false, err
	}
	if len(up)+1 >= maxSubDepth {
		return fail(fmt.Sprintf("sub-workflows nest deeper than %d", maxSubDepth))
	}
	for _, id := range append(up, run.ID) {
		r := run
		if id != run.ID {
			if r, err = tx.WorkflowRunGet(ctx, id); err != nil {
				return false, err
			}
		}
		if r.WorkflowID == w.ID {
			return fail(fmt.Sprintf("recursion: workflow %s already runs above this node (run %d)", w.Name, id))
		}
	}
	defaults, err := ParseParams(w.Params)
	if err != nil {
		return fail(fmt.Sprintf("workflow %s: %v", w.Name, err))
	}
	params, err := workflow.SubWorkflowParams(defaults, in.Params, in.Parents)
	if err != nil {
		return false, fmt.Errorf("node %s: %w", n.Node, err)
	}
	begun, err := e.startRun(ctx, tx, w.ID, params, store.CauseWorkflow, nil, now, n.ID)
	if err != nil {
		return false, err
	}
	child := begun.run
	n.ChildRun = child.ID
	if child.State == string(workflow.RunRunning) {
		return false, nil
	}
	end, err := childEnd(ctx, tx, child, g)
	if err != nil {
		return false, err
	}
	st, _ := spec.Outcome(end.succeeded)
	n.State, n.Result, n.Message = string(st), end.result, end.message
	return true, nil
}

// childEnd is the end an ended child run gives its node.
func childEnd(ctx context.Context, q store.Querier, child *store.WorkflowRun, g *workflow.Graph) (nodeEnd, error) {
	end := nodeEnd{node: child.ParentNode, child: child.ID, canceled: child.State == string(workflow.RunCanceled)}
	if child.State != string(workflow.RunSucceeded) {
		end.message = fmt.Sprintf("sub-workflow run %d %s: %s", child.ID, child.State, child.Message)
		return end, nil
	}
	rows, err := q.WorkflowNodes(ctx, child.ID)
	if err != nil {
		return end, err
	}
	results := make(map[string]string, len(rows))
	for _, r := range rows {
		results[r.Node] = r.Result
	}
	res, err := g.SubWorkflowResult(results)
	if err != nil {
		return end, err
	}
	if err := checkResult(json.RawMessage(res)); err != nil {
		end.message = fmt.Sprintf("sub-workflow run %d: %v", child.ID, err)
		return end, nil
	}
	end.succeeded, end.result, end.message = true, res, fmt.Sprintf("sub-workflow run %d succeeded", child.ID)
	return end, nil
}

// endParents records, in tx, the ends of the ended runs among runs that are sub-workflow runs
// as their nodes' ends, and advances the parent runs (which tx has locked: see lockRuns). It
// returns the runs that ended in turn.
func (e *Engine) endParents(ctx context.Context, tx store.Querier, runs []*store.WorkflowRun, now time.Time) ([]int64, error) {
	var ends []nodeEnd
	for _, r := range runs {
		if r.ParentNode == 0 || r.State == string(workflow.RunRunning) {
			continue
		}
		g, err := ParseGraph(r.Graph)
		if err != nil {
			return nil, fmt.Errorf("workflow run %d: %w", r.ID, err)
		}
		end, err := childEnd(ctx, tx, r, g)
		if err != nil {
			return nil, err
		}
		ends = append(ends, end)
	}
	if len(ends) == 0 {
		return nil, nil
	}
	return e.advanceWorkflows(ctx, tx, ends, now)
}
