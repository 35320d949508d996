package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// wfLedger is the test's record, outside the database, of every workflow node handler run:
// which node ran, with which input, on which engine.
type wfLedger struct {
	mu     sync.Mutex
	runs   map[string][]string // node name -> engines that ran it (first attempts and retries)
	inputs map[string]WorkflowInput
}

func newLedger() *wfLedger {
	return &wfLedger{runs: map[string][]string{}, inputs: map[string]WorkflowInput{}}
}

// handle records the run and calls do with the node's input; do returns the node's result
// (marshalled as its Return) or an error.
func (l *wfLedger) handle(node string, do func(in WorkflowInput, f *Fire) (any, error)) func(ctx context.Context, f *Fire) Result {
	return func(ctx context.Context, f *Fire) Result {
		var in WorkflowInput
		if f.WorkflowInput != "" {
			if err := json.Unmarshal([]byte(f.WorkflowInput), &in); err != nil {
				return Result{Err: err}
			}
		}
		l.mu.Lock()
		l.runs[in.Node] = append(l.runs[in.Node], node)
		l.inputs[in.Node] = in
		l.mu.Unlock()
		if do == nil {
			return Result{}
		}
		v, err := do(in, f)
		if err != nil {
			return Result{Err: err}
		}
		b, _ := json.Marshal(v)
		return Result{Return: b}
	}
}

func (l *wfLedger) count(node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs[node])
}

// wfJobs inserts one job per name, its handler named after it, and returns them by name.
func wfJobs(t *testing.T, st store.Store, opts func(*store.Job), names ...string) map[string]*store.Job {
	out := map[string]*store.Job{}
	for _, n := range names {
		out[n] = insertJob(t, st, n, func(j *store.Job) {
			j.Handler = n
			if opts != nil {
				opts(j)
			}
		})
	}
	return out
}

// insertWorkflow stores a workflow whose graph is built with %d verbs filled by the jobs'
// ids in the order given.
func insertWorkflow(t *testing.T, st store.Store, name, graph string, params string, ids ...any) *store.Workflow {
	t.Helper()
	src := fmt.Sprintf(graph, ids...)
	if _, err := ParseGraph(src); err != nil {
		t.Fatalf("graph of %s: %v", name, err)
	}
	w := &store.Workflow{Name: name, Graph: src, Params: params}
	if err := st.WorkflowInsert(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// byHandler dispatches each fire to the behaviour registered for its job's handler.
func byHandler(hs map[string]func(ctx context.Context, f *Fire) Result) func(ctx context.Context, f *Fire) Result {
	return func(ctx context.Context, f *Fire) Result {
		if h := hs[f.Job.Handler]; h != nil {
			return h(ctx, f)
		}
		return Result{Err: fmt.Errorf("no handler %s", f.Job.Handler)}
	}
}

// waitRun waits for the run's end (the engine's signal, sent after the commit) and returns
// the run and its nodes by name.
func waitRun(t *testing.T, e *Engine, st store.Store, runID int64) (*store.WorkflowRun, map[string]*store.WorkflowNode) {
	t.Helper()
	for {
		id := waitFor(t, fmt.Sprintf("workflow run %d to end", runID), e.signals.workflows, 1)[0]
		if id == runID {
			break
		}
	}
	return runState(t, st, runID)
}

func runState(t *testing.T, st store.Store, runID int64) (*store.WorkflowRun, map[string]*store.WorkflowNode) {
	t.Helper()
	ctx := context.Background()
	run, err := st.WorkflowRunGet(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := st.WorkflowNodes(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*store.WorkflowNode{}
	for _, n := range ns {
		out[n.Node] = n
	}
	return run, out
}

func wantStates(t *testing.T, run *store.WorkflowRun, nodes map[string]*store.WorkflowNode, runState string, want map[string]string) {
	t.Helper()
	if run.State != runState {
		t.Errorf("run %d is %s (%s), want %s", run.ID, run.State, run.Message, runState)
	}
	for name, st := range want {
		n := nodes[name]
		got := "absent"
		if n != nil {
			got = n.State
		}
		if got != st {
			t.Errorf("node %s is %s, want %s", name, got, st)
		}
	}
	if len(nodes) != len(want) {
		t.Errorf("run has %d node rows, want %d", len(nodes), len(want))
	}
}

// TestWorkflowDiamondDataPassing runs a diamond a -> (b, c) -> d: each node gets the run's
// params and its parents' results, d runs once after both b and c, and each node's
// execution is linked to its row.
func TestWorkflowDiamondDataPassing(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, nil, "a", "b", "c", "d")
		w := insertWorkflow(t, st, "diamond", `{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d},{"name":"c","job_id":%d},{"name":"d","job_id":%d}],
			"edges":[{"from":"a","to":"b"},{"from":"a","to":"c"},{"from":"b","to":"d"},{"from":"c","to":"d"}]}`, `{"base":10}`,
			jobs["a"].ID, jobs["b"].ID, jobs["c"].ID, jobs["d"].ID)
		led := newLedger()
		num := func(in WorkflowInput, parent string) float64 {
			var v map[string]float64
			_ = json.Unmarshal(in.Parents[parent], &v)
			return v["n"]
		}
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) {
				return map[string]any{"n": in.Params["base"].(float64) + 1}, nil
			}),
			"b": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) { return map[string]any{"n": num(in, "a") * 2}, nil }),
			"c": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) { return map[string]any{"n": num(in, "a") * 3}, nil }),
			"d": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) {
				return map[string]any{"n": num(in, "b") + num(in, "c")}, nil
			}),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(context.Background(), w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"a": "succeeded", "b": "succeeded", "c": "succeeded", "d": "succeeded"})
		if got := nodes["d"].Result; got != `{"n":55}` {
			t.Errorf("d's result = %s, want 22+33 = {\"n\":55}", got)
		}
		if in := led.inputs["d"]; len(in.Parents) != 2 || in.Params["base"] != 10.0 || in.RunID != run.ID {
			t.Errorf("d's input = %+v, want the params and both parents", in)
		}
		for _, n := range []string{"a", "b", "c", "d"} {
			if c := led.count(n); c != 1 {
				t.Errorf("node %s ran %d times", n, c)
			}
			x, err := st.ExecutionGet(context.Background(), nodes[n].ExecutionID)
			if err != nil {
				t.Fatalf("node %s's execution: %v", n, err)
			}
			if x.WorkflowNode != nodes[n].ID || x.JobID != jobs[n].ID || x.Cause != store.CauseWorkflow || x.State != store.ExecSucceeded {
				t.Errorf("node %s's execution %+v is not its job's succeeded workflow run", n, x)
			}
		}
		// Run now with params replaces the workflow's.
		run2, err := e.StartWorkflow(context.Background(), w.ID, `{"base":0}`, store.CauseAPI)
		if err != nil {
			t.Fatal(err)
		}
		_, nodes = waitRun(t, e, st, run2.ID)
		if got := nodes["d"].Result; got != `{"n":5}` {
			t.Errorf("with base 0, d's result = %s, want {\"n\":5}", got)
		}
	})
}

// TestWorkflowDecision takes one branch of a decision node by an expression over the params
// and the parent's result: the other branch is skipped, and so is what follows it only.
func TestWorkflowDecision(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, nil, "count", "big", "small", "after_small", "report")
		w := insertWorkflow(t, st, "decide", `{"nodes":[{"name":"count","job_id":%d},{"name":"check","kind":"decision","expr":"parents.count.rows > params.limit"},
			{"name":"big","job_id":%d},{"name":"small","job_id":%d},{"name":"after_small","job_id":%d},{"name":"report","job_id":%d}],
			"edges":[{"from":"count","to":"check"},{"from":"check","to":"big","when":"true"},{"from":"check","to":"small","when":"false"},
			{"from":"small","to":"after_small"},{"from":"big","to":"report","when":"always"},{"from":"after_small","to":"report","when":"always"}]}`,
			`{"limit":100}`, jobs["count"].ID, jobs["big"].ID, jobs["small"].ID, jobs["after_small"].ID, jobs["report"].ID)
		led := newLedger()
		rec := newRecorder()
		ok := func(in WorkflowInput, _ *Fire) (any, error) { return nil, nil }
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"count":       led.handle("n1", func(WorkflowInput, *Fire) (any, error) { return map[string]int{"rows": 250}, nil }),
			"big":         led.handle("n1", ok),
			"small":       led.handle("n1", ok),
			"after_small": led.handle("n1", ok),
			"report":      led.handle("n1", ok),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(context.Background(), w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"count": "succeeded", "check": "true", "big": "succeeded",
			"small": "skipped", "after_small": "skipped", "report": "succeeded"})
		if led.count("small")+led.count("after_small") != 0 || led.count("big") != 1 || led.count("report") != 1 {
			t.Errorf("ledger %v: want big and report once, the false branch never", led.runs)
		}
		// A higher limit takes the other branch.
		run, err = e.StartWorkflow(context.Background(), w.ID, `{"limit":1000}`, store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"count": "succeeded", "check": "false", "big": "skipped",
			"small": "succeeded", "after_small": "succeeded", "report": "succeeded"})
		// An expression that fails at run time fails its node, and the run (on_failure fail).
		run, err = e.StartWorkflow(context.Background(), w.ID, `{"limit":"x"}`, store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "failed", map[string]string{"count": "succeeded", "check": "failed", "big": "canceled",
			"small": "canceled", "after_small": "canceled", "report": "canceled"})
	})
}

// TestWorkflowOnFailure runs a failing node under each on_failure: fail (the run fails and
// what waits is canceled), continue (on_failure edges are taken, the run succeeds) and skip
// (the node counts as skipped and its children skip). A failing node's retries run first.
func TestWorkflowOnFailure(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, func(j *store.Job) {
			if j.Handler == "bad" {
				j.MaxRetries = 1
			}
		}, "bad", "next", "rescue", "last")
		led := newLedger()
		rec := newRecorder()
		ok := func(WorkflowInput, *Fire) (any, error) { return nil, nil }
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"bad":    led.handle("n1", func(WorkflowInput, *Fire) (any, error) { return nil, errors.New("boom") }),
			"next":   led.handle("n1", ok),
			"rescue": led.handle("n1", ok),
			"last":   led.handle("n1", ok),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		graph := `{"nodes":[{"name":"bad","job_id":%d,"on_failure":"%s"},{"name":"next","job_id":%d},{"name":"rescue","job_id":%d},{"name":"last","job_id":%d}],
			"edges":[{"from":"bad","to":"next"},{"from":"bad","to":"rescue","when":"on_failure"},{"from":"next","to":"last","when":"always"}]}`
		for _, c := range []struct {
			on    string
			run   string
			nodes map[string]string
		}{
			{"fail", "failed", map[string]string{"bad": "failed", "next": "canceled", "rescue": "canceled", "last": "canceled"}},
			{"continue", "succeeded", map[string]string{"bad": "failed", "next": "skipped", "rescue": "succeeded", "last": "succeeded"}},
			{"skip", "succeeded", map[string]string{"bad": "skipped", "next": "skipped", "rescue": "skipped", "last": "succeeded"}},
		} {
			w := insertWorkflow(t, st, "on-"+c.on, graph, "", jobs["bad"].ID, c.on, jobs["next"].ID, jobs["rescue"].ID, jobs["last"].ID)
			before := led.count("bad")
			run, err := e.StartWorkflow(context.Background(), w.ID, "", store.CauseManual)
			if err != nil {
				t.Fatal(err)
			}
			run, nodes := waitRun(t, e, st, run.ID)
			t.Run(c.on, func(t *testing.T) {
				wantStates(t, run, nodes, c.run, c.nodes)
				if got := led.count("bad") - before; got != 2 {
					t.Errorf("bad ran %d times, want its first attempt and its one retry", got)
				}
				x, err := st.ExecutionGet(context.Background(), nodes["bad"].ExecutionID)
				if err != nil || x.Attempt != 1 || x.WorkflowNode != nodes["bad"].ID {
					t.Errorf("bad's linked execution = %+v, %v; want its retry (attempt 1)", x, err)
				}
			})
		}
	})
}

// TestWorkflowNodeCrash kills the node running a workflow between two of its nodes' ends —
// a's end is committed, b is running on the victim — and checks that a survivor finishes the
// run: b, which requests recovery, runs again there as the same workflow node, c follows,
// and no node's row or execution is created twice.
func TestWorkflowNodeCrash(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, func(j *store.Job) { j.RequestsRecovery = true }, "a", "b", "c")
		w := insertWorkflow(t, st, "chain", `{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d},{"name":"c","job_id":%d}],
			"edges":[{"from":"a","to":"b"},{"from":"b","to":"c"}]}`, "", jobs["a"].ID, jobs["b"].ID, jobs["c"].ID)
		led := newLedger()
		bStarted := make(chan struct{}, 1)
		victimRec := newRecorder()
		victimRec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("victim", func(WorkflowInput, *Fire) (any, error) { return "from a", nil }),
			"b": func(ctx context.Context, f *Fire) Result {
				res := led.handle("victim", nil)(ctx, f)
				bStarted <- struct{}{}
				<-ctx.Done() // the node dies with b running: its end is never written
				return res
			},
		})
		victim := newEngine(t, st, victimRec, "victim", clock.Real{}, nil)
		startEngine(t, victim)
		run, err := victim.StartWorkflow(context.Background(), w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "b to start on the victim", bStarted, 1)
		_, nodes := runState(t, st, run.ID)
		wantStates(t, &store.WorkflowRun{ID: run.ID, State: "running"}, nodes, "running", map[string]string{"a": "succeeded", "b": "running"})
		victim.abandon()

		survivorRec := newRecorder()
		survivorRec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("survivor", nil),
			"b": led.handle("survivor", func(in WorkflowInput, _ *Fire) (any, error) { return "from b", nil }),
			"c": led.handle("survivor", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["b"], nil }),
		})
		survivor := newEngine(t, st, survivorRec, "survivor", clock.Real{}, nil)
		startEngine(t, survivor)
		recoverWhileLeading(t, survivor)
		run, nodes = waitRun(t, survivor, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"a": "succeeded", "b": "succeeded", "c": "succeeded"})
		led.mu.Lock()
		defer led.mu.Unlock()
		if got := fmt.Sprint(led.runs); got != "map[a:[victim] b:[victim survivor] c:[survivor]]" {
			t.Errorf("ledger %s: want a once on the victim, b on the victim and recovered on the survivor, c once", got)
		}
		if nodes["c"].Result != `"from b"` {
			t.Errorf("c's result %s: c did not get the recovered b's result", nodes["c"].Result)
		}
		x, err := st.ExecutionGet(context.Background(), nodes["b"].ExecutionID)
		if err != nil || x.Cause != store.CauseRecovery || x.WorkflowNode != nodes["b"].ID {
			t.Errorf("b's linked execution = %+v, %v; want the recovery run of its node", x, err)
		}
		perNode := firstExecutions(t, st)
		for name, n := range nodes {
			if perNode[n.ID] != 1 {
				t.Errorf("node %s has %d first executions, want 1", name, perNode[n.ID])
			}
		}
	})
}

// firstExecutions counts the first executions (attempt 0) of each workflow node, by node id.
func firstExecutions(t *testing.T, st store.Store) map[int64]int {
	t.Helper()
	all, err := st.ExecutionList(context.Background(), store.ExecutionFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[int64]int{}
	for _, x := range all {
		if x.Attempt == 0 {
			perNode[x.WorkflowNode]++
		}
	}
	return perNode
}

// TestWorkflowNodeNotRunOnStop records a workflow node's fire canceled because its scheduler
// node was stopping before the handler began, as launch does: the workflow node does not
// fail; its fire runs again (cause recovery, still linked to the node) and the run goes on.
func TestWorkflowNodeNotRunOnStop(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a")
		w := insertWorkflow(t, st, "one", `{"nodes":[{"name":"a","job_id":%d}]}`, "", jobs["a"].ID)
		rec := newRecorder()
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		_, nodes := runState(t, st, run.ID)
		x, err := st.ExecutionGet(ctx, nodes["a"].ExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		// The fire as a node holds it once won: running.
		o := store.Owner{Node: "n1"}
		if _, err := st.ExecutionsAcquire(ctx, o, []int64{x.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExecutionsMarkRunning(ctx, o, []int64{x.ID}, x.ScheduledAt); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		done, err := e.writeCompletions(ctx, nil, []completion{{fire: &Fire{Execution: x, Job: jobs["a"]}, state: store.ExecCanceled,
			res: Result{Err: errStopping}, started: now, finished: now}})
		if err != nil || len(done) != 1 {
			t.Fatalf("write the canceled fire: %v, %v", done, err)
		}
		run2, nodes := runState(t, st, run.ID)
		if run2.State != "running" || nodes["a"].State != "running" {
			t.Fatalf("run %s, node a %s: a fire no handler ran failed the workflow", run2.State, nodes["a"].State)
		}
		pending, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: jobs["a"].ID, State: store.ExecPending})
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 1 || pending[0].WorkflowNode != nodes["a"].ID || pending[0].Cause != store.CauseRecovery {
			t.Fatalf("pending fires %+v: want one recovery of node a", pending)
		}
		// A node takes it and the run ends.
		led := newLedger()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{"a": led.handle("n1", nil)})
		startEngine(t, e)
		run2, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, run2, nodes, "succeeded", map[string]string{"a": "succeeded"})
	})
}

// TestWorkflowTrigger schedules a workflow with a trigger of a workflow trigger job (handler
// sundial.workflow, params the workflow's name): each of its fires starts one run, with the
// workflow's params and the fire's cause, in the transaction that records the fire.
func TestWorkflowTrigger(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, nil, "a")
		w := insertWorkflow(t, st, "nightly", `{"nodes":[{"name":"a","job_id":%d}]}`, `{"day":"today"}`, jobs["a"].ID)
		starter := insertJob(t, st, "nightly-trigger", func(j *store.Job) { j.Handler = WorkflowHandler; j.Params = w.Name })
		insertTrigger(t, st, starter, "every", schedule.Simple{Interval: 200 * time.Millisecond, RepeatCount: 2}, time.Now().Add(100*time.Millisecond), nil)
		led := newLedger()
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a":             led.handle("n1", nil),
			WorkflowHandler: func(context.Context, *Fire) Result { return Result{} },
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		ended := waitFor(t, "three runs to end", e.signals.workflows, 3)
		runs, err := st.WorkflowRunList(context.Background(), w.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 3 {
			t.Fatalf("%d runs for 3 fires (ended %v)", len(runs), ended)
		}
		for _, r := range runs {
			if r.State != "succeeded" || r.Params != `{"day":"today"}` || r.Cause != store.CauseSchedule {
				t.Errorf("run %+v: want succeeded, with the workflow's params, caused by the schedule", r)
			}
		}
		if got := led.count("a"); got != 3 {
			t.Errorf("node a ran %d times, want once a run", got)
		}
		if in := led.inputs["a"]; in.Params["day"] != "today" {
			t.Errorf("a's input %+v", in)
		}
	})
}

// TestWorkflowCancel cancels runs: a node whose execution has not started is canceled with
// it (its execution ends canceled, so no node can run it), and a node running when the run is
// canceled finishes and is recorded, but nothing follows it.
func TestWorkflowCancel(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a", "b")
		w := insertWorkflow(t, st, "two", `{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d}],"edges":[{"from":"a","to":"b"}]}`, "",
			jobs["a"].ID, jobs["b"].ID)
		led := newLedger()
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": func(ctx context.Context, f *Fire) Result {
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done(): // killed with its run
				}
				return led.handle("n1", nil)(ctx, f)
			},
			"b": led.handle("n1", nil),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)

		// Not started: canceled with the run.
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.CancelWorkflowRun(ctx, run.ID, "canceled by test"); !ok || err != nil {
			t.Fatalf("cancel: %v, %v", ok, err)
		}
		got, nodes := runState(t, st, run.ID)
		wantStates(t, got, nodes, "canceled", map[string]string{"a": "canceled"})
		if x, err := st.ExecutionGet(ctx, nodes["a"].ExecutionID); err != nil || x.State != store.ExecCanceled {
			t.Fatalf("a's execution %+v, %v: want canceled", x, err)
		}
		if ok, err := e.CancelWorkflowRun(ctx, run.ID, "again"); ok || err != nil {
			t.Fatalf("a second cancel: %v, %v; want nothing changed", ok, err)
		}

		// Running: its execution is killed (the handler's context ends), its end is recorded
		// canceled, and b never starts.
		startEngine(t, e)
		run, err = e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a to start", started, 1)
		_, nodes = runState(t, st, run.ID)
		if ok, err := e.CancelWorkflowRun(ctx, run.ID, "canceled by test"); !ok || err != nil {
			t.Fatalf("cancel: %v, %v", ok, err)
		}
		for {
			if id := waitFor(t, "a's end", e.signals.completed, 1)[0]; id == nodes["a"].ExecutionID {
				break
			}
		}
		close(release)
		got, nodes = runState(t, st, run.ID)
		wantStates(t, got, nodes, "canceled", map[string]string{"a": "canceled"})
		if x, err := st.ExecutionGet(ctx, nodes["a"].ExecutionID); err != nil || x.State != store.ExecCanceled || !strings.Contains(x.HandleMsg, "killed") {
			t.Errorf("a's execution %+v, %v: want it killed", x, err)
		}
		if led.count("b") != 0 {
			t.Error("b ran after its run was canceled")
		}
	})
}

// TestWorkflowJobDeleted deletes the job of a node whose fire waits (pending): the fire is
// canceled with the job, and the node ends failed (by its on_failure) instead of leaving its
// run waiting forever.
func TestWorkflowJobDeleted(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a", "b")
		w := insertWorkflow(t, st, "two", `{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d}],"edges":[{"from":"a","to":"b"}]}`, "",
			jobs["a"].ID, jobs["b"].ID)
		e := newEngine(t, st, newRecorder(), "n1", clock.Real{}, nil)
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.InTx(ctx, st, func(q store.Querier) error { return e.DeleteJobTx(ctx, q, jobs["a"].ID) }); err != nil {
			t.Fatal(err)
		}
		got, nodes := runState(t, st, run.ID)
		wantStates(t, got, nodes, "failed", map[string]string{"a": "failed", "b": "canceled"})
		if !strings.Contains(nodes["a"].Message, "deleted") {
			t.Errorf("a's message %q does not say its job was deleted", nodes["a"].Message)
		}
		if _, err := st.JobGet(ctx, jobs["a"].ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the job is still there: %v", err)
		}
	})
}

// TestWorkflowNodeRunSettings checks a node's own run settings: retries (with their backoff)
// in place of its job's max_retries, none where the job has some, and a timeout in place of
// its job's.
func TestWorkflowNodeRunSettings(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		jobs := wfJobs(t, st, func(j *store.Job) {
			if j.Handler == "once" {
				j.MaxRetries = 3 // the node says 0
			}
		}, "flaky", "once", "slow")
		w := insertWorkflow(t, st, "settings", `{"nodes":[{"name":"flaky","job_id":%d,"retries":2,"retry_backoff_ms":1},
			{"name":"once","job_id":%d,"retries":0,"on_failure":"continue"},{"name":"slow","job_id":%d,"timeout_ms":50,"on_failure":"continue"}]}`, "",
			jobs["flaky"].ID, jobs["once"].ID, jobs["slow"].ID)
		led := newLedger()
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"flaky": led.handle("n1", func(_ WorkflowInput, f *Fire) (any, error) {
				if f.Execution.Attempt < 2 {
					return nil, errors.New("not yet")
				}
				return "third time", nil
			}),
			"once": led.handle("n1", func(WorkflowInput, *Fire) (any, error) { return nil, errors.New("boom") }),
			"slow": func(ctx context.Context, f *Fire) Result {
				led.handle("n1", nil)(ctx, f)
				<-ctx.Done() // the job has no timeout: only the node's ends it
				return Result{Err: ctx.Err()}
			},
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(context.Background(), w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"flaky": "succeeded", "once": "failed", "slow": "failed"})
		if led.count("flaky") != 3 || led.count("once") != 1 || led.count("slow") != 1 {
			t.Errorf("ledger %v: want flaky 3 times (2 node retries), once once (node retries 0 over the job's 3), slow once", led.runs)
		}
		x, err := st.ExecutionGet(context.Background(), nodes["flaky"].ExecutionID)
		if err != nil || x.Attempt != 2 || x.Cause != store.CauseRetry {
			t.Errorf("flaky's linked execution %+v, %v: want its second retry", x, err)
		}
		x, err = st.ExecutionGet(context.Background(), nodes["slow"].ExecutionID)
		if err != nil || x.State != store.ExecTimedOut {
			t.Errorf("slow's execution %+v, %v: want timed out by the node's timeout", x, err)
		}
	})
}

// TestWorkflowTimeout fails a run whose timeout elapses (by the time the engine is given):
// its running node's execution is killed and recorded canceled, and what waits never starts.
func TestWorkflowTimeout(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a", "b")
		w := insertWorkflow(t, st, "bounded", `{"timeout_ms":60000,"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d}],
			"edges":[{"from":"a","to":"b"}]}`, "", jobs["a"].ID, jobs["b"].ID)
		led := newLedger()
		started := make(chan struct{}, 1)
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": func(ctx context.Context, f *Fire) Result {
				started <- struct{}{}
				<-ctx.Done()
				return led.handle("n1", nil)(ctx, f)
			},
			"b": led.handle("n1", nil),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		if run.DeadlineAt != run.CreatedAt+60000 {
			t.Fatalf("run deadline %d, created %d: want a minute later", run.DeadlineAt, run.CreatedAt)
		}
		waitFor(t, "a to start", started, 1)
		at := time.UnixMilli(run.DeadlineAt)
		if n, err := e.timeOutWorkflowsAt(ctx, at.Add(-time.Millisecond)); n != 0 || err != nil {
			t.Fatalf("before the deadline: %d ended, %v", n, err)
		}
		_, nodes := runState(t, st, run.ID)
		if n, err := e.timeOutWorkflowsAt(ctx, at); n != 1 || err != nil {
			t.Fatalf("at the deadline: %d ended, %v", n, err)
		}
		for {
			if id := waitFor(t, "a's end", e.signals.completed, 1)[0]; id == nodes["a"].ExecutionID {
				break
			}
		}
		got, nodes := runState(t, st, run.ID)
		wantStates(t, got, nodes, "failed", map[string]string{"a": "canceled"})
		if !strings.Contains(got.Message, "timed out") {
			t.Errorf("run message %q does not say it timed out", got.Message)
		}
		if x, err := st.ExecutionGet(ctx, nodes["a"].ExecutionID); err != nil || x.State != store.ExecCanceled {
			t.Errorf("a's execution %+v, %v: want it killed", x, err)
		}
		if led.count("b") != 0 {
			t.Error("b ran after its run timed out")
		}
		if n, err := e.timeOutWorkflowsAt(ctx, at.Add(time.Hour)); n != 0 || err != nil {
			t.Errorf("a second sweep: %d ended, %v", n, err)
		}
	})
}

// TestWorkflowRetryFromFailed repairs failed runs as an operator does: a retry from the
// failed nodes reruns b (its next attempt) and judges again c, which b's failure canceled,
// while a and d, which succeeded, do not run again; two operators retrying the same node at
// once start it once (the other is refused); marking a failed node succeeded with a result
// hands that result to its children.
func TestWorkflowRetryFromFailed(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a", "b", "c", "d")
		w := insertWorkflow(t, st, "repair", `{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d},{"name":"c","job_id":%d},{"name":"d","job_id":%d}],
			"edges":[{"from":"a","to":"b"},{"from":"b","to":"c"},{"from":"a","to":"d"}]}`, "", jobs["a"].ID, jobs["b"].ID, jobs["c"].ID, jobs["d"].ID)
		led := newLedger()
		var mu sync.Mutex
		bFails := true
		rec := newRecorder()
		ok := func(WorkflowInput, *Fire) (any, error) { return nil, nil }
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("n1", ok),
			"b": led.handle("n1", func(WorkflowInput, *Fire) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if bFails {
					return nil, errors.New("b broke")
				}
				return map[string]int{"n": 1}, nil
			}),
			"c": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["b"], nil }),
			"d": led.handle("n1", ok),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		got, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, got, nodes, "failed", map[string]string{"a": "succeeded", "b": "failed", "c": "canceled", "d": "succeeded"})
		firstB := nodes["b"].ExecutionID

		// Nothing to repair in a node that succeeded, nor in one the run does not have.
		var se *StateError
		if _, err := e.RetryWorkflowNode(ctx, run.ID, "a"); !errors.As(err, &se) {
			t.Errorf("retry of a succeeded node: %v, want a StateError", err)
		}
		if _, err := e.RetryWorkflowNode(ctx, run.ID, "zz"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("retry of no node: %v, want not found", err)
		}

		// Two operators retry b at once (while it still fails): one starts it, one is refused.
		// b's handler waits on mu meanwhile, so the retried b cannot end (and be retriable
		// again) before the second operator's call is answered.
		mu.Lock()
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := e.RetryWorkflowNode(ctx, run.ID, "b"); errs <- err }()
		}
		e1, e2 := <-errs, <-errs
		mu.Unlock()
		if (e1 == nil) == (e2 == nil) || !errors.As(errors.Join(e1, e2), &se) {
			t.Fatalf("two retries of b at once: %v and %v; want one started and one refused", e1, e2)
		}
		got, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, got, nodes, "failed", map[string]string{"a": "succeeded", "b": "failed", "c": "canceled", "d": "succeeded"})
		if led.count("b") != 2 {
			t.Errorf("b ran %d times, want its first run and one operator's retry", led.count("b"))
		}

		// Retry from the failed nodes, b fixed: b runs again as its next attempt, c follows.
		mu.Lock()
		bFails = false
		mu.Unlock()
		if _, err := e.RetryWorkflowRun(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		got, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, got, nodes, "succeeded", map[string]string{"a": "succeeded", "b": "succeeded", "c": "succeeded", "d": "succeeded"})
		if fmt.Sprint(led.count("a"), led.count("b"), led.count("c"), led.count("d")) != "1 3 1 1" {
			t.Errorf("ledger %v: want a, c, d once and b three times", led.runs)
		}
		x, err := st.ExecutionGet(ctx, nodes["b"].ExecutionID)
		if err != nil || x.Attempt != 2 || x.WorkflowNode != nodes["b"].ID || x.ID == firstB {
			t.Errorf("b's execution %+v, %v: want its attempt 2, linked to the node", x, err)
		}
		if nodes["c"].Result != `{"n":1}` {
			t.Errorf("c's result %s: want the retried b's", nodes["c"].Result)
		}
		if _, err := e.RetryWorkflowRun(ctx, run.ID); !errors.As(err, &se) {
			t.Errorf("retry of a succeeded run: %v, want a StateError", err)
		}

		// Mark succeeded: b fails again in a new run; marked succeeded with a result, c gets it.
		mu.Lock()
		bFails = true
		mu.Unlock()
		run, err = e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		got, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, got, nodes, "failed", map[string]string{"a": "succeeded", "b": "failed", "c": "canceled", "d": "succeeded"})
		if _, err := e.MarkWorkflowNodeSucceeded(ctx, run.ID, "b", `{"n":`); err == nil {
			t.Error("a result that is not JSON was taken")
		}
		if _, err := e.MarkWorkflowNodeSucceeded(ctx, run.ID, "b", `{"n":7}`); err != nil {
			t.Fatal(err)
		}
		got, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, got, nodes, "succeeded", map[string]string{"a": "succeeded", "b": "succeeded", "c": "succeeded", "d": "succeeded"})
		if nodes["c"].Result != `{"n":7}` || led.count("b") != 4 {
			t.Errorf("c's result %s, b ran %d times: want the marked result and b not run again", nodes["c"].Result, led.count("b"))
		}
	})
}

// TestWorkflowNodeRetriesAlarmOnce gives a node more retries than its job (which has alarm
// targets): its attempts that are retried alarm nobody, and its final failure alarms once;
// a node with fewer retries than its job alarms on its final failure, which its job would
// have retried.
func TestWorkflowNodeRetriesAlarmOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, func(j *store.Job) {
			j.AlarmTargets = []string{"ops@example.com"}
			if j.Handler == "few" {
				j.MaxRetries = 5
			}
		}, "many", "few")
		w := insertWorkflow(t, st, "alarms", `{"nodes":[{"name":"many","job_id":%d,"retries":2,"on_failure":"continue"},
			{"name":"few","job_id":%d,"retries":0,"on_failure":"continue"}]}`, "", jobs["many"].ID, jobs["few"].ID)
		rec := newRecorder()
		rec.behave = func(context.Context, *Fire) Result { return Result{Err: errors.New("down")} }
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, e, st, run.ID)
		for name, want := range map[string]string{"many": "none none pending", "few": "pending"} {
			xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: jobs[name].ID, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(xs))
			for _, x := range xs {
				got[x.Attempt] = string(x.AlarmState)
				if got[x.Attempt] == "" {
					got[x.Attempt] = "none"
				}
			}
			if strings.Join(got, " ") != want {
				t.Errorf("node %s's alarms by attempt: %v, want %s", name, got, want)
			}
		}
	})
}
