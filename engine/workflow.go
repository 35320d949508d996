package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// This file holds the workflow policy: how a workflow run starts, and how it advances when
// one of its nodes ends. A run's progress lives in its node rows; every advance locks the
// run's row first (WorkflowRunLock) and happens in the transaction that records the node's
// end, so a node's end and the nodes it starts are committed together or not at all, and a
// node row, unique per (run, node), is inserted once: no node runs twice, and none is lost
// when a scheduler node dies between two nodes' ends.

// nodeEnd is the end of a workflow node's execution. Whether it is the node's final attempt
// is decided where the run's graph is read (advanceWorkflows): a retryable end of a run
// whose ex and job are known is retried by the node's retries, or its job's.
type nodeEnd struct {
	node, execution int64
	succeeded       bool
	result          string
	message         string
	// retryable: the run failed or timed out (not killed, nor lost with its job).
	retryable bool
	// canceled: the run was killed or canceled; once its workflow run has ended the node is
	// recorded canceled rather than failed.
	canceled bool
	ex       *store.Execution
	job      *store.Job
	// child is the sub-workflow run whose end this is (0 for an execution's): it ends its
	// node only while the node is running that child.
	child int64
}

// WorkflowInput is what a node's handler is given: the run's params and, by parent node name,
// each parent's result (null for none).
type WorkflowInput struct {
	RunID   int64                      `json:"run_id"`
	Node    string                     `json:"node"`
	Params  map[string]any             `json:"params"`
	Parents map[string]json.RawMessage `json:"parents"`
	// TimeoutMs is the node's own timeout, which replaces its job's (0: the job's).
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// nodeTimeout gives a workflow node's fire the node's timeout in place of its job's: the
// fire's job becomes a copy (the cached job is shared), so in-process, shell and remote
// runs are all bounded by it, and the job's other settings stay as they are.
func nodeTimeout(f *Fire) {
	if f.WorkflowInput == "" || f.Job == nil {
		return
	}
	var in struct {
		TimeoutMs int64 `json:"timeout_ms"`
	}
	if json.Unmarshal([]byte(f.WorkflowInput), &in) != nil || in.TimeoutMs <= 0 {
		return
	}
	j := *f.Job
	j.TimeoutMs = in.TimeoutMs
	f.Job = &j
}

// nodeRetry is, for a retryable end of a node, when its next attempt runs, or false when its
// retries (the node's own, or else its job's) are spent.
func nodeRetry(spec workflow.Node, end nodeEnd) (time.Duration, bool) {
	if end.succeeded || !end.retryable || end.ex == nil || end.job == nil {
		return 0, false
	}
	retries, initial := end.job.MaxRetries, end.job.RetryBackoffMs
	if spec.Retries != nil {
		retries = *spec.Retries
	}
	if spec.RetryBackoffMs > 0 {
		initial = spec.RetryBackoffMs
	}
	if end.ex.Attempt >= retries {
		return 0, false
	}
	return backoff.Policy{Initial: msDuration(initial), Max: maxRetryBackoff}.Delay(end.ex.Attempt), true
}

// ParseGraph decodes a stored or submitted graph, fills its defaults and validates it: a
// *schedule.FieldError names the offending field.
func ParseGraph(src string) (*workflow.Graph, error) {
	var g workflow.Graph
	dec := json.NewDecoder(bytes.NewReader([]byte(src)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, schedule.Fieldf("graph", "not a workflow graph: %v", err)
	}
	g.Normalize()
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &g, nil
}

// ParseParams decodes a run's params: a JSON object, or "" for none.
func ParseParams(src string) (map[string]any, error) {
	out := map[string]any{}
	if src == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(src), &out); err != nil {
		return nil, schedule.Fieldf("params", "not a JSON object: %v", err)
	}
	return out, nil
}

// checkResult refuses a run's result that is not JSON or is larger than the store keeps.
func checkResult(r json.RawMessage) error {
	if len(r) > store.MaxResultBytes {
		return fmt.Errorf("the run's result is %d bytes, more than the %d allowed", len(r), store.MaxResultBytes)
	}
	if len(r) > 0 && !json.Valid(r) {
		return errors.New("the run's result is not JSON")
	}
	return nil
}

// StartWorkflow starts a run of the workflow now, with params (a JSON object) in place of the
// workflow's own when not empty: the run's root nodes are created pending in the same
// transaction, under the workflow's row lock and overlap policy (startRun). It returns the
// run as stored, which the policy may have queued or skipped.
func (e *Engine) StartWorkflow(ctx context.Context, workflowID int64, params string, cause store.ExecutionCause) (*store.WorkflowRun, error) {
	if _, err := ParseParams(params); err != nil {
		return nil, err
	}
	// One transaction, with the audit entry the caller's context asks for (store.InTx).
	var st started
	err := store.InTx(ctx, e.store, func(q store.Querier) error {
		var err error
		st, err = e.startRun(ctx, q, workflowID, params, cause, nil, e.clock.Now(), 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.afterStart(ctx, []started{st})
	e.Wake()
	return st.run, nil
}

// started is what startRun did: the run, the runs it ended at once (it, when skipped or done
// at once, and the queued runs it dropped), and the running runs its policy cancels, which
// are ended after the commit (afterStart): ending them takes their rows' locks, which must
// not be taken under the workflow's.
type started struct {
	run     *store.WorkflowRun
	ended   []int64
	replace []int64
	policy  jobrun.Policy
}

// startRun inserts a run of the workflow in q and starts its ready nodes, with params, or the
// workflow's own for ""; fire, when a trigger job's execution started the run, gives it that
// fire's data interval and backfill. It locks the workflow's row first: a delete of the
// workflow waits for it (or it finds the workflow gone), and the workflow's overlap policy is
// decided on the runs the lock shows, on every node alike (workflowOverlap). parentNode is the
// sub-workflow node the run is for (0 for none): such a run is a part of its parent's run, which
// its parent's policy already admitted, so the child workflow's own policy does not apply to it
// (its runs still count as running for that policy's later top-level runs).
func (e *Engine) startRun(ctx context.Context, q store.Querier, workflowID int64, params string,
	cause store.ExecutionCause, fire *store.Execution, now time.Time, parentNode int64) (started, error) {
	var st started
	w, err := q.WorkflowLock(ctx, workflowID)
	if err != nil {
		return st, err
	}
	g, err := ParseGraph(w.Graph)
	if err != nil {
		return st, fmt.Errorf("workflow %s: %w", w.Name, err)
	}
	if params == "" {
		params = w.Params
	}
	run := &store.WorkflowRun{WorkflowID: w.ID, State: string(workflow.RunRunning), Graph: w.Graph, Params: params, Cause: cause,
		CreatedAt: now.UnixMilli(), Version: w.Version, ParentNode: parentNode}
	if fire != nil {
		run.IntervalStart, run.IntervalEnd, run.BackfillID = fire.IntervalStart, fire.IntervalEnd, fire.BackfillID
	}
	if parentNode == 0 {
		if err := e.applyWorkflowOverlap(ctx, q, w, run, &st, now); err != nil {
			return st, err
		}
	}
	if run.State == string(workflow.RunRunning) && g.TimeoutMs > 0 {
		run.DeadlineAt = now.UnixMilli() + g.TimeoutMs
	}
	if err := q.WorkflowRunInsert(ctx, run); err != nil {
		return st, err
	}
	st.run = run
	switch run.State {
	case string(workflow.RunRunning):
		if err := e.stepRun(ctx, q, run, g, now); err != nil {
			return st, fmt.Errorf("start workflow %s: %w", w.Name, err)
		}
		if run.State != string(workflow.RunRunning) {
			st.ended = append(st.ended, run.ID)
		}
	case string(workflow.RunSkipped):
		st.ended = append(st.ended, run.ID)
	}
	return st, nil
}

// WorkflowHandler is the handler of a workflow's trigger job: a job with this handler, run in
// process, whose params name a workflow, starts a run of that workflow (with the workflow's
// params) each time one of its fires succeeds, in the transaction that records the fire. So a
// workflow is scheduled by the triggers of such a job, with every trigger kind, calendar and
// misfire policy, and a fire starts exactly one run.
const WorkflowHandler = "sundial.workflow"

// startTriggered starts the runs the succeeded fires of workflow trigger jobs call for, in
// tx; the caller passes what it returns to afterStart once tx has committed.
func (e *Engine) startTriggered(ctx context.Context, tx store.Querier, fires []*Fire, now time.Time) ([]started, error) {
	var out []started
	for _, f := range fires {
		name := runParams(f.Job, f.Execution)
		w, err := tx.WorkflowGetByName(ctx, name)
		if err == nil {
			var st started
			st, err = e.startRun(ctx, tx, w.ID, "", f.Execution.Cause, f.Execution, now, 0)
			out = append(out, st)
		}
		if errors.Is(err, store.ErrNotFound) {
			e.log.Error("a workflow trigger job names no workflow; nothing started", "job", f.Job.ID, "execution", f.Execution.ID, "workflow", name)
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CancelWorkflowRun ends a running workflow run as canceled: its pending nodes never start,
// and the executions of its running nodes are killed (see endRun). It reports false when the
// run had ended already.
func (e *Engine) CancelWorkflowRun(ctx context.Context, runID int64, message string) (bool, error) {
	return e.endRun(ctx, runID, workflow.RunCanceled, message)
}

// TimeOutWorkflows fails the running workflow runs whose timeout has elapsed by the engine's
// clock, as CancelWorkflowRun cancels, and returns how many it ended. The leader calls it
// every heartbeat interval (maintenance.WorkflowTimeouts).
// It also starts the queued runs a node that died did not start (startQueuedAll).
func (e *Engine) TimeOutWorkflows(ctx context.Context) (int, error) {
	n, err := e.timeOutWorkflowsAt(ctx, e.clock.Now())
	if err != nil {
		return n, err
	}
	return n, e.startQueuedAll(ctx)
}

func (e *Engine) timeOutWorkflowsAt(ctx context.Context, now time.Time) (int, error) {
	n := 0
	for {
		runs, err := e.store.WorkflowRunsOverdue(ctx, now.UnixMilli(), 100)
		if err != nil {
			return n, err
		}
		for _, r := range runs {
			limit := time.Duration(r.DeadlineAt-r.CreatedAt) * time.Millisecond
			ended, err := e.endRun(ctx, r.ID, workflow.RunFailed, fmt.Sprintf("timed out: the workflow's timeout of %s elapsed", limit))
			if err != nil {
				return n, fmt.Errorf("time out workflow run %d: %w", r.ID, err)
			}
			if ended {
				n++
			}
		}
		if len(runs) < 100 {
			return n, nil
		}
	}
}

// endRun moves a running run to state (compare-and-set on running): its nodes whose
// executions have not started are canceled with them, so no node can run them, and after the
// commit the executions of its running nodes are killed (in process, here or on their node
// through a kill request; on an executor, through the remote killer the server sets). Their
// ends are recorded canceled and nothing follows them. Its running sub-workflow runs are
// canceled with it, in the same transaction; a sub-workflow run's end is its node's end (see
// endParents). It reports false when the run had ended already.
func (e *Engine) endRun(ctx context.Context, runID int64, state workflow.RunState, message string) (bool, error) {
	var running, ended []int64
	err := store.InTx(ctx, e.store, func(q store.Querier) error {
		running, ended = nil, nil
		runs, err := lockRuns(ctx, q, []int64{runID})
		if err != nil {
			return err
		}
		run := runs[runID]
		if run == nil {
			return fmt.Errorf("workflow run %d: %w", runID, store.ErrNotFound)
		}
		now := e.clock.Now()
		moved, err := e.endRunTx(ctx, q, run, state, message, now.UnixMilli(), &running, &ended)
		if err == nil && !moved {
			err = errRunEnded // nothing changed: no audit entry either
		}
		if err != nil {
			return err
		}
		run.State = string(state)
		up, err := e.endParents(ctx, q, []*store.WorkflowRun{run}, now)
		ended = append(ended, up...)
		return err
	})
	if errors.Is(err, errRunEnded) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e.workflowRunsEnded(ctx, ended)
	e.killRunning(ctx, running)
	return true, nil
}

// endRunTx is endRun's work on one run whose lock q holds (and its ancestors'): it adds the
// executions to kill after the commit to running and the runs it ended to ended.
func (e *Engine) endRunTx(ctx context.Context, q store.Querier, run *store.WorkflowRun, state workflow.RunState, message string, now int64,
	running, ended *[]int64) (bool, error) {
	moved, err := q.WorkflowRunFinish(ctx, run.ID, string(state), message, now)
	if err != nil || !moved {
		return false, err
	}
	*ended = append(*ended, run.ID)
	nodes, err := q.WorkflowNodes(ctx, run.ID)
	if err != nil {
		return false, err
	}
	var ids []int64
	byExec := map[int64]*store.WorkflowNode{}
	for _, n := range nodes {
		if n.State == string(workflow.Running) && n.ExecutionID != 0 {
			ids = append(ids, n.ExecutionID)
			byExec[n.ExecutionID] = n
		}
	}
	canceled, err := q.ExecutionsCancelUnstarted(ctx, ids, message)
	if err != nil {
		return false, err
	}
	gone := idSet(canceled)
	for _, id := range ids {
		if !gone[id] {
			*running = append(*running, id)
			continue
		}
		n := byExec[id]
		n.State, n.Message, n.UpdatedAt = string(workflow.Canceled), message, now
		if _, err := q.WorkflowNodeUpdate(ctx, n, string(workflow.Running)); err != nil {
			return false, err
		}
	}
	// Sub-workflow runs end with their parent. Their ids are above the parent's, so locking
	// them here keeps the ascending order of lockRuns.
	for _, n := range nodes {
		if n.State != string(workflow.Running) || n.ChildRun == 0 {
			continue
		}
		child, err := q.WorkflowRunLock(ctx, n.ChildRun)
		if err != nil {
			return false, fmt.Errorf("lock sub-workflow run %d: %w", n.ChildRun, err)
		}
		why := fmt.Sprintf("canceled with its parent run %d: %s", run.ID, message)
		if child.State == string(workflow.RunRunning) {
			if _, err := e.endRunTx(ctx, q, child, workflow.RunCanceled, why, now, running, ended); err != nil {
				return false, err
			}
		}
		n.State, n.Message, n.UpdatedAt = string(workflow.Canceled), why, now
		if _, err := q.WorkflowNodeUpdate(ctx, n, string(workflow.Running)); err != nil {
			return false, err
		}
	}
	return true, nil
}

// RemoteKiller kills a run on its executor; it reports whether the executor was running it.
type RemoteKiller func(ctx context.Context, x *store.Execution) (bool, error)

// SetRemoteKiller sets how the executions of ended workflow runs that run on executors are
// killed (the server's dispatcher); without one they run to their end, and nothing follows.
func (e *Engine) SetRemoteKiller(k RemoteKiller) { e.remoteKill.Store(&k) }

// killRunning kills the running executions ids, best effort: one that ended meanwhile needs
// nothing, and a failure is logged (the run has ended; the execution's end advances nothing).
func (e *Engine) killRunning(ctx context.Context, ids []int64) {
	if len(ids) == 0 {
		return
	}
	xs, err := e.store.ExecutionsGet(ctx, ids)
	if err != nil {
		e.log.Error("reading the running nodes of an ended workflow run", "executions", ids, "err", err)
		return
	}
	for _, x := range xs {
		if x.State != store.ExecRunning {
			continue
		}
		if err := e.killRun(ctx, x, "killed with its workflow run (the executor was not running it)"); err != nil {
			e.log.Warn("killing a node of an ended workflow run", "execution", x.ID, "err", err)
		}
	}
}

// killRun stops the running execution x wherever it runs: in process on any node (Kill), or
// on its executor (the RemoteKiller; without one it runs to its end). A run its executor was
// not running ends here, canceled with notRunning as its message.
func (e *Engine) killRun(ctx context.Context, x *store.Execution, notRunning string) error {
	if x.ExecutorAddress == "" {
		_, err := e.Kill(ctx, x)
		return err
	}
	k := e.remoteKill.Load()
	if k == nil {
		return nil
	}
	killed, err := (*k)(ctx, x)
	if err != nil || killed {
		return err
	}
	now := e.clock.Now()
	_, err = e.CompleteRemote(ctx, []RemoteResult{{ExecutionID: x.ID, State: store.ExecCanceled,
		Message: notRunning, Started: now, Finished: now}})
	return err
}

var errRunEnded = errors.New("the workflow run has ended")

// advanceWorkflows records the ends of workflow nodes in tx and starts what they make ready.
// Runs are locked in id order, so two writers of ends of the same runs cannot deadlock.
func (e *Engine) advanceWorkflows(ctx context.Context, tx store.Querier, ends []nodeEnd, now time.Time) (ended []int64, err error) {
	retried := false
	defer func() {
		if retried && err == nil {
			e.Wake()
		}
	}()
	ids := make([]int64, len(ends))
	for i, end := range ends {
		ids[i] = end.node
	}
	ns, err := tx.WorkflowNodesGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d workflow nodes: %w", len(ids), err)
	}
	byID := make(map[int64]*store.WorkflowNode, len(ns))
	var runs []int64
	for _, n := range ns {
		byID[n.ID] = n
		if !slices.Contains(runs, n.RunID) {
			runs = append(runs, n.RunID)
		}
	}
	slices.Sort(runs)
	locked, err := lockRuns(ctx, tx, runs)
	if err != nil {
		return nil, err
	}
	var subEnded []*store.WorkflowRun // sub-workflow runs that end here: their nodes end too
	for _, runID := range runs {
		run := locked[runID]
		if run == nil {
			continue
		}
		g, err := ParseGraph(run.Graph)
		if err != nil {
			return nil, fmt.Errorf("workflow run %d: %w", runID, err)
		}
		for _, end := range ends {
			n := byID[end.node]
			if n == nil || n.RunID != runID {
				continue
			}
			if end.child != 0 && (n.State != string(workflow.Running) || n.ChildRun != end.child) {
				continue // a child run the node no longer waits for (it was retried or canceled)
			}
			spec, _ := g.Node(n.Node)
			if delay, ok := nodeRetry(spec, end); ok && run.State == string(workflow.RunRunning) {
				// Not the final attempt: the node stays running, linked to its retry.
				next := e.followUp(end.job, end.ex, store.CauseRetry, now.Add(delay).UnixMilli())
				if _, err := tx.ExecutionsInsert(ctx, []*store.Execution{next}); err != nil {
					return nil, err
				}
				n.ExecutionID, n.Message, n.UpdatedAt = next.ID, end.message, now.UnixMilli()
				if _, err := tx.WorkflowNodeUpdate(ctx, n, n.State); err != nil {
					return nil, err
				}
				retried = true
				// The job's own retries decided its alarm with the result; the node's retries
				// decide it here: an attempt that is retried tells nobody.
				if _, err := tx.ExecutionsSetAlarm(ctx, []int64{end.execution}, store.AlarmPending, store.AlarmNone); err != nil {
					return nil, err
				}
				continue
			}
			if !end.succeeded && end.retryable && end.ex != nil && end.job != nil && len(end.job.AlarmTargets) > 0 {
				// The node's final failure alarms once (a no-op when its result made the alarm
				// pending already).
				if _, err := tx.ExecutionsSetAlarm(ctx, []int64{end.execution}, store.AlarmNone, store.AlarmPending); err != nil {
					return nil, err
				}
			}
			state, _ := spec.Outcome(end.succeeded)
			if end.canceled && run.State != string(workflow.RunRunning) {
				state = workflow.Canceled // killed with its run
			}
			from := n.State
			n.State, n.ExecutionID, n.Result, n.Message, n.UpdatedAt = string(state), end.execution, end.result, end.message, now.UnixMilli()
			if _, err := tx.WorkflowNodeUpdate(ctx, n, from); err != nil {
				return nil, err
			}
		}
		if run.State != string(workflow.RunRunning) {
			continue // canceled meanwhile: its nodes' ends are recorded, and nothing follows
		}
		if err := e.stepRun(ctx, tx, run, g, now); err != nil {
			return nil, fmt.Errorf("advance workflow run %d: %w", runID, err)
		}
		if run.State != string(workflow.RunRunning) {
			ended = append(ended, runID)
			if run.ParentNode != 0 {
				subEnded = append(subEnded, run)
			}
		}
	}
	up, err := e.endParents(ctx, tx, subEnded, now)
	return append(ended, up...), err
}

// stepRun starts what is ready in a run whose lock tx holds (or which tx inserted): it
// records skipped and canceled nodes, decides decision nodes on the spot, creates the
// executions of ready job nodes, and finishes the run when every node has ended.
func (e *Engine) stepRun(ctx context.Context, tx store.Querier, run *store.WorkflowRun, g *workflow.Graph, now time.Time) error {
	params, err := ParseParams(run.Params)
	if err != nil {
		return err
	}
	for {
		rows, err := tx.WorkflowNodes(ctx, run.ID)
		if err != nil {
			return err
		}
		states := make(map[string]workflow.State, len(rows))
		results := make(map[string]json.RawMessage, len(rows))
		failed, why := false, ""
		for _, r := range rows {
			states[r.Node] = workflow.State(r.State)
			if r.Result != "" {
				results[r.Node] = json.RawMessage(r.Result)
			}
			if spec, _ := g.Node(r.Node); r.State == string(workflow.Failed) && spec.OnFailure == workflow.FailWorkflow && !failed {
				failed, why = true, fmt.Sprintf("node %s failed: %s", r.Node, r.Message)
			}
		}
		start, skip, cancel, state := g.Step(states, failed)
		var ended []*store.WorkflowNode
		for _, name := range skip {
			ended = append(ended, &store.WorkflowNode{RunID: run.ID, Node: name, State: string(workflow.Skipped), UpdatedAt: now.UnixMilli()})
		}
		for _, name := range cancel {
			ended = append(ended, &store.WorkflowNode{RunID: run.ID, Node: name, State: string(workflow.Canceled), UpdatedAt: now.UnixMilli()})
		}
		var jobNodes, subNodes []*store.WorkflowNode
		var subInputs []WorkflowInput
		var jobIDs []int64
		decided := false
		for _, name := range start {
			spec, _ := g.Node(name)
			in := WorkflowInput{RunID: run.ID, Node: name, Params: params, Parents: map[string]json.RawMessage{}, TimeoutMs: spec.TimeoutMs}
			for _, p := range g.Parents(name) {
				in.Parents[p] = results[p]
			}
			if spec.Kind == workflow.KindDecision {
				decided = true
				ended = append(ended, decide(run.ID, spec, in, now))
				continue
			}
			input, err := json.Marshal(in)
			if err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			node := &store.WorkflowNode{RunID: run.ID, Node: name, State: string(workflow.Running), Input: string(input), UpdatedAt: now.UnixMilli()}
			if spec.Kind == workflow.KindWorkflow {
				subNodes, subInputs = append(subNodes, node), append(subInputs, in)
				continue
			}
			jobNodes = append(jobNodes, node)
			jobIDs = append(jobIDs, spec.JobID)
		}
		if len(jobNodes) > 0 {
			// A node whose job is gone fails (by its on_failure) instead of running nothing.
			js, err := tx.JobsGet(ctx, jobIDs)
			if err != nil {
				return err
			}
			have := make(map[int64]bool, len(js))
			for _, j := range js {
				have[j.ID] = true
			}
			kept := jobNodes[:0]
			for i, n := range jobNodes {
				if have[jobIDs[i]] {
					kept = append(kept, n)
					continue
				}
				spec, _ := g.Node(n.Node)
				st, _ := spec.Outcome(false)
				n.State, n.Message = string(st), fmt.Sprintf("job %d does not exist", jobIDs[i])
				ended = append(ended, n)
				decided = true
			}
			jobNodes = kept
		}
		if err := tx.WorkflowNodesInsert(ctx, slices.Concat(ended, jobNodes, subNodes)); err != nil {
			return err
		}
		// A sub-workflow node's child run starts here, in the transaction that inserted the
		// node running, and is linked to it by the update below.
		for i, n := range subNodes {
			spec, _ := g.Node(n.Node)
			done, err := e.startChild(ctx, tx, run, spec, n, subInputs[i], now)
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Node, err)
			}
			decided = decided || done
			if _, err := tx.WorkflowNodeUpdate(ctx, n, string(workflow.Running)); err != nil {
				return err
			}
		}
		if len(jobNodes) > 0 {
			xs := make([]*store.Execution, len(jobNodes))
			for i, n := range jobNodes {
				spec, _ := g.Node(n.Node)
				// A node runs for its run's data interval. Not in its backfill: a backfill's
				// runs are the trigger job's fires and the workflow runs they start, which its
				// concurrency counts.
				xs[i] = &store.Execution{JobID: spec.JobID, ScheduledAt: now.UnixMilli(), Cause: store.CauseWorkflow,
					State: store.ExecPending, WorkflowNode: n.ID, IntervalStart: run.IntervalStart, IntervalEnd: run.IntervalEnd}
			}
			if _, err := tx.ExecutionsInsert(ctx, xs); err != nil {
				return err
			}
			for i, n := range jobNodes {
				n.ExecutionID = xs[i].ID
				if _, err := tx.WorkflowNodeUpdate(ctx, n, n.State); err != nil {
					return err
				}
			}
		}
		if decided {
			continue // a decision, or a node failed at once, may make more nodes ready
		}
		if state != workflow.RunRunning {
			if _, err := tx.WorkflowRunFinish(ctx, run.ID, string(state), why, now.UnixMilli()); err != nil {
				return err
			}
			run.State, run.Message, run.FinishedAt = string(state), why, now.UnixMilli()
		}
		return nil
	}
}

// decide evaluates a decision node into its ended row: true or false, or failed (by its
// on_failure) when the expression fails.
func decide(runID int64, spec workflow.Node, in WorkflowInput, now time.Time) *store.WorkflowNode {
	parents := make(map[string]any, len(in.Parents))
	for name, raw := range in.Parents {
		var v any
		if len(raw) > 0 {
			_ = json.Unmarshal(raw, &v) // stored results are checked JSON
		}
		parents[name] = v
	}
	n := &store.WorkflowNode{RunID: runID, Node: spec.Name, UpdatedAt: now.UnixMilli()}
	ok, err := workflow.Decide(spec.Expr, in.Params, parents)
	switch {
	case err != nil:
		st, _ := spec.Outcome(false)
		n.State, n.Message = string(st), err.Error()
	case ok:
		n.State, n.Result = string(workflow.True), "true"
	default:
		n.State, n.Result = string(workflow.False), "false"
	}
	return n
}

// workflowInputs reads the inputs of the due fires that run workflow nodes, by node id, in one
// read; fires outside workflows cost none.
func (e *Engine) workflowInputs(ctx context.Context, due []*pendingFire) (map[int64]string, error) {
	var ids []int64
	for _, pf := range due {
		if pf.exec.WorkflowNode != 0 {
			ids = append(ids, pf.exec.WorkflowNode)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	ns, err := e.store.WorkflowNodesGet(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(ns))
	for _, n := range ns {
		out[n.ID] = n.Input
	}
	return out, nil
}

// WorkflowApps checks that every job node of g references a job that exists (a
// *schedule.FieldError naming nodes[i].job_id otherwise) and returns the apps of those jobs,
// each once ("" stands for jobs of no app), with those of the workflows its sub-workflow
// nodes run, through every level: a workflow is within a person's scope when each of its apps
// is.
func WorkflowApps(ctx context.Context, q store.Querier, g *workflow.Graph) ([]string, error) {
	return workflowApps(ctx, q, g, map[string]bool{})
}

func workflowApps(ctx context.Context, q store.Querier, g *workflow.Graph, seen map[string]bool) ([]string, error) {
	var ids []int64
	for _, n := range g.Nodes {
		if n.Kind == workflow.KindJob {
			ids = append(ids, n.JobID)
		}
	}
	js, err := q.JobsGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the jobs of a workflow: %w", err)
	}
	apps := map[int64]string{}
	for _, j := range js {
		apps[j.ID] = j.App
	}
	var out []string
	for i, n := range g.Nodes {
		if n.Kind != workflow.KindJob {
			continue
		}
		app, ok := apps[n.JobID]
		if !ok {
			return nil, schedule.Fieldf(fmt.Sprintf("nodes[%d].job_id", i), "job %d does not exist", n.JobID)
		}
		if !slices.Contains(out, app) {
			out = append(out, app)
		}
	}
	return subWorkflowApps(ctx, q, g, out, seen)
}

// DeleteJobTx deletes a job in q (store.JobDelete, which cancels its fires that have not
// started) and ends as failed, by their on_failure, the workflow nodes whose runs those fires
// were: a workflow run is never left waiting on a fire that will not come.
func (e *Engine) DeleteJobTx(ctx context.Context, q store.Querier, jobID int64) error {
	var ends []nodeEnd
	for after := int64(0); ; {
		xs, err := q.ExecutionList(ctx, store.ExecutionFilter{JobID: jobID, State: store.ExecPending, AfterID: after, Limit: 500})
		if err != nil {
			return err
		}
		for _, x := range xs {
			after = x.ID
			if x.WorkflowNode != 0 {
				ends = append(ends, nodeEnd{node: x.WorkflowNode, execution: x.ID, message: fmt.Sprintf("job %d deleted", jobID)})
			}
		}
		if len(xs) < 500 {
			break
		}
	}
	if err := q.JobDelete(ctx, jobID); err != nil {
		return err
	}
	if len(ends) == 0 {
		return nil
	}
	_, err := e.advanceWorkflows(ctx, q, ends, e.clock.Now())
	return err
}

// The operators' repairs of a workflow run. Each takes the run's lock and moves each node it
// touches by a compare-and-set on the node's state, in one transaction: two operators (or an
// operator and a node's end) racing on one node cannot both start it; the second is refused
// with a *StateError (HTTP 409).

// retriable reports whether an operator may run the node again: a node that ended without
// succeeding (failed; canceled; skipped after it ran and failed with on_failure skip).
func retriable(n *store.WorkflowNode) bool {
	switch workflow.State(n.State) {
	case workflow.Failed, workflow.Canceled:
		return true
	case workflow.Skipped:
		return ran(n)
	}
	return false
}

// ran reports whether a node ran something: an execution, or a sub-workflow run.
func ran(n *store.WorkflowNode) bool { return n.ExecutionID != 0 || n.ChildRun != 0 }

// RetryWorkflowNode runs a node of a run again now, as its execution's next attempt (a
// decision is decided again): the node must have ended without succeeding. Its descendants
// that never ran because of it (skipped or canceled, with no execution) are judged again, and
// a run that had ended is reopened (with its timeout counted from now).
func (e *Engine) RetryWorkflowNode(ctx context.Context, runID int64, node string) (*store.WorkflowRun, error) {
	return e.repairRun(ctx, runID, func(g *workflow.Graph, nodes map[string]*store.WorkflowNode) ([]repair, error) {
		n := nodes[node]
		if _, ok := g.Node(node); !ok {
			return nil, fmt.Errorf("workflow run %d has no node %q: %w", runID, node, store.ErrNotFound)
		}
		if n == nil || !retriable(n) {
			return nil, &StateError{Msg: fmt.Sprintf("node %s of workflow run %d is %s: only a node that failed or was canceled can be retried", node, runID, stateOf(n))}
		}
		return []repair{{node: n}}, nil
	})
}

// RetryWorkflowRun runs again every node of a run that ended without succeeding (see
// RetryWorkflowNode), and reopens the run: a retry from its failed nodes.
func (e *Engine) RetryWorkflowRun(ctx context.Context, runID int64) (*store.WorkflowRun, error) {
	return e.repairRun(ctx, runID, func(g *workflow.Graph, nodes map[string]*store.WorkflowNode) ([]repair, error) {
		var out []repair
		for _, spec := range g.Nodes {
			// A canceled node with no execution never started: it is judged again, not retried.
			if n := nodes[spec.Name]; n != nil && retriable(n) && (ran(n) || n.State == string(workflow.Failed)) {
				out = append(out, repair{node: n})
			}
		}
		if len(out) == 0 {
			return nil, &StateError{Msg: fmt.Sprintf("workflow run %d has no failed node to retry", runID)}
		}
		return out, nil
	})
}

// MarkWorkflowNodeSucceeded records a node that ended without succeeding (or has not
// started) as succeeded, with result (JSON, "" for none) as its result: its children run as if
// it had. A run that had ended is reopened. A running node is refused (kill it first).
func (e *Engine) MarkWorkflowNodeSucceeded(ctx context.Context, runID int64, node, result string) (*store.WorkflowRun, error) {
	if err := checkResult(json.RawMessage(result)); err != nil {
		return nil, schedule.Fieldf("result", "%v", err)
	}
	return e.repairRun(ctx, runID, func(g *workflow.Graph, nodes map[string]*store.WorkflowNode) ([]repair, error) {
		if _, ok := g.Node(node); !ok {
			return nil, fmt.Errorf("workflow run %d has no node %q: %w", runID, node, store.ErrNotFound)
		}
		n := nodes[node]
		if n != nil && !retriable(n) && n.State != string(workflow.Skipped) {
			return nil, &StateError{Msg: fmt.Sprintf("node %s of workflow run %d is %s: only a node that has not succeeded and is not running can be marked succeeded", node, runID, n.State)}
		}
		if n == nil {
			n = &store.WorkflowNode{RunID: runID, Node: node, State: string(workflow.Pending)}
		}
		return []repair{{node: n, succeeded: true, result: result}}, nil
	})
}

func stateOf(n *store.WorkflowNode) string {
	if n == nil {
		return string(workflow.Pending)
	}
	return n.State
}

// repair is one node an operator moves: run again, or marked succeeded with result.
type repair struct {
	node      *store.WorkflowNode
	succeeded bool
	result    string
}

// repairRun locks the run, asks pick for the nodes to move, reopens the run if it had ended,
// moves them, forgets the nodes that never ran because of them, and steps the run.
func (e *Engine) repairRun(ctx context.Context, runID int64, pick func(*workflow.Graph, map[string]*store.WorkflowNode) ([]repair, error)) (*store.WorkflowRun, error) {
	var run *store.WorkflowRun
	var up []int64 // runs above it that end with it
	err := store.InTx(ctx, e.store, func(q store.Querier) error {
		up = nil
		runs, err := lockRuns(ctx, q, []int64{runID})
		if err != nil {
			return err
		}
		if run = runs[runID]; run == nil {
			return fmt.Errorf("workflow run %d: %w", runID, store.ErrNotFound)
		}
		g, err := ParseGraph(run.Graph)
		if err != nil {
			return fmt.Errorf("workflow run %d: %w", runID, err)
		}
		rows, err := q.WorkflowNodes(ctx, runID)
		if err != nil {
			return err
		}
		nodes := make(map[string]*store.WorkflowNode, len(rows))
		for _, r := range rows {
			nodes[r.Node] = r
		}
		repairs, err := pick(g, nodes)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		reopened := false
		if run.State != string(workflow.RunRunning) {
			deadline := int64(0)
			if g.TimeoutMs > 0 {
				deadline = now.UnixMilli() + g.TimeoutMs
			}
			moved, err := q.WorkflowRunReopen(ctx, runID, run.State, deadline)
			if err != nil {
				return err
			}
			if !moved {
				return &StateError{Msg: fmt.Sprintf("workflow run %d changed meanwhile", runID)}
			}
			run.State, run.Message, run.FinishedAt, run.DeadlineAt = string(workflow.RunRunning), "", 0, deadline
			reopened = true
		}
		// The nodes that never ran because of the repaired ones are judged again: their
		// skipped or canceled descendants with no execution, and, in a reopened run, every
		// node its end canceled before it started.
		forget := map[int64]bool{}
		children := map[string][]string{}
		for _, ed := range g.Edges {
			children[ed.From] = append(children[ed.From], ed.To)
		}
		var walk func(name string)
		walk = func(name string) {
			for _, c := range children[name] {
				if r := nodes[c]; r != nil && !ran(r) && (r.State == string(workflow.Skipped) || r.State == string(workflow.Canceled)) {
					forget[r.ID] = true
				}
				walk(c)
			}
		}
		for _, rp := range repairs {
			walk(rp.node.Node)
		}
		if reopened {
			for _, r := range rows {
				if !ran(r) && r.State == string(workflow.Canceled) {
					forget[r.ID] = true
				}
			}
		}
		var jobIDs []int64
		for _, rp := range repairs {
			if spec, _ := g.Node(rp.node.Node); !rp.succeeded && spec.Kind == workflow.KindJob {
				jobIDs = append(jobIDs, spec.JobID)
			}
		}
		jobs := map[int64]*store.Job{}
		if len(jobIDs) > 0 {
			js, err := q.JobsGet(ctx, jobIDs)
			if err != nil {
				return err
			}
			for _, j := range js {
				jobs[j.ID] = j
			}
		}
		for _, rp := range repairs {
			n, spec := rp.node, workflow.Node{}
			spec, _ = g.Node(n.Node)
			from := n.State
			switch {
			case rp.succeeded && n.ID == 0:
				n.State, n.Result, n.Message, n.UpdatedAt = string(workflow.Succeeded), rp.result, "marked succeeded", now.UnixMilli()
				if err := q.WorkflowNodesInsert(ctx, []*store.WorkflowNode{n}); err != nil {
					if errors.Is(err, store.ErrAlreadyExists) {
						return &StateError{Msg: fmt.Sprintf("node %s of workflow run %d started meanwhile", n.Node, runID)}
					}
					return err
				}
				continue
			case rp.succeeded:
				n.State, n.Result, n.Message = string(workflow.Succeeded), rp.result, "marked succeeded"
			case spec.Kind == workflow.KindDecision || spec.Kind == workflow.KindWorkflow || n.ExecutionID == 0:
				// Decided (or started) again by the step below; a sub-workflow node starts a new
				// child run there (the old run stays as history).
				forget[n.ID] = true
				continue
			default:
				job := jobs[spec.JobID]
				if job == nil {
					return &StateError{Msg: fmt.Sprintf("node %s of workflow run %d: its job %d does not exist", n.Node, runID, spec.JobID)}
				}
				last, err := q.ExecutionGet(ctx, n.ExecutionID)
				if err != nil {
					return fmt.Errorf("node %s of workflow run %d: its execution: %w", n.Node, runID, err)
				}
				next := e.followUp(job, last, store.CauseRetry, now.UnixMilli())
				if _, err := q.ExecutionsInsert(ctx, []*store.Execution{next}); err != nil {
					return err
				}
				n.State, n.ExecutionID, n.Result, n.Message = string(workflow.Running), next.ID, "", "retried"
			}
			n.UpdatedAt = now.UnixMilli()
			moved, err := q.WorkflowNodeUpdate(ctx, n, from)
			if err != nil {
				return err
			}
			if !moved {
				return &StateError{Msg: fmt.Sprintf("node %s of workflow run %d changed meanwhile", n.Node, runID)}
			}
		}
		if len(forget) > 0 {
			ids := make([]int64, 0, len(forget))
			for id := range forget {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if err := q.WorkflowNodesDelete(ctx, runID, ids); err != nil {
				return err
			}
		}
		if err := e.stepRun(ctx, q, run, g, now); err != nil {
			return err
		}
		up, err = e.endParents(ctx, q, []*store.WorkflowRun{run}, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	if run.State != string(workflow.RunRunning) {
		e.workflowRunsEnded(ctx, append([]int64{run.ID}, up...))
	}
	e.Wake()
	return run, nil
}
