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
	"github.com/sundial-scheduler/sundial/workflow"
)

// childRuns lists the runs of workflow w (all sub-workflow runs in these tests).
func childRuns(t *testing.T, st store.Store, w *store.Workflow) []*store.WorkflowRun {
	t.Helper()
	rs, err := st.WorkflowRunList(context.Background(), w.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestSubWorkflowDataPassing runs a -> sub -> b where sub runs workflow child (x -> y): the
// child run is linked both ways, x gets the parent's params and a's result, the node's result
// is the child's sink results by name, and b gets it.
func TestSubWorkflowDataPassing(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a", "b", "x", "y")
		child := insertWorkflow(t, st, "child", `{"nodes":[{"name":"x","job_id":%d},{"name":"y","job_id":%d}],"edges":[{"from":"x","to":"y"}]}`,
			`{"base":1,"own":"child default"}`, jobs["x"].ID, jobs["y"].ID)
		parent := insertWorkflow(t, st, "parent", `{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":"child"},{"name":"b","job_id":%d}],
			"edges":[{"from":"a","to":"sub"},{"from":"sub","to":"b"}]}`, `{"base":10}`, jobs["a"].ID, jobs["b"].ID)
		led := newLedger()
		var xParams map[string]any
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) {
				return map[string]any{"n": in.Params["base"].(float64) + 1}, nil
			}),
			"x": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) {
				xParams = in.Params
				var a struct{ A struct{ N float64 } }
				b, _ := json.Marshal(in.Params["parents"])
				_ = json.Unmarshal(b, &a)
				return map[string]any{"n": a.A.N * 2}, nil
			}),
			"y": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) {
				var v map[string]float64
				_ = json.Unmarshal(in.Parents["x"], &v)
				return map[string]any{"n": v["n"] + 1}, nil
			}),
			"b": led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["sub"], nil }),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		run, err := e.StartWorkflow(ctx, parent.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"a": "succeeded", "sub": "succeeded", "b": "succeeded"})
		// a: 11; x: 22; y: 23; the node's result is the child's sink y's by name.
		if got := nodes["sub"].Result; got != `{"y":{"n":23}}` {
			t.Errorf("sub's result = %s, want {\"y\":{\"n\":23}}", got)
		}
		if got := nodes["b"].Result; got != `{"y":{"n":23}}` {
			t.Errorf("b's result = %s: b did not get sub's result", got)
		}
		if xParams["base"] != 10.0 || xParams["own"] != "child default" {
			t.Errorf("x's params %v: want the parent's base over the child's default, and the child's own default", xParams)
		}
		runs := childRuns(t, st, child)
		if len(runs) != 1 {
			t.Fatalf("child workflow has %d runs, want 1", len(runs))
		}
		cr := runs[0]
		if cr.ID != nodes["sub"].ChildRun || cr.ParentNode != nodes["sub"].ID || cr.State != "succeeded" || cr.Cause != store.CauseWorkflow {
			t.Errorf("child run %+v; sub node %+v: want them linked both ways, succeeded", cr, nodes["sub"])
		}
		if nodes["sub"].ExecutionID != 0 {
			t.Errorf("sub node has execution %d: it runs a workflow, not a job", nodes["sub"].ExecutionID)
		}
		for _, n := range []string{"a", "x", "y", "b"} {
			if c := led.count(n); c != 1 {
				t.Errorf("node %s ran %d times", n, c)
			}
		}
	})
}

// TestSubWorkflowFailure fails the child's x: the sub-workflow node fails and its on_failure
// applies (continue takes the on_failure edge, skip skips what follows on success, fail fails
// the run and cancels what waits); an operator's retry of the failed node starts a new child
// run, which succeeds this time.
func TestSubWorkflowFailure(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "x", "handler", "next", "after")
		child := insertWorkflow(t, st, "flaky", `{"nodes":[{"name":"x","job_id":%d}]}`, "", jobs["x"].ID)
		lenient := insertWorkflow(t, st, "lenient", `{"nodes":[{"name":"sub_c","kind":"workflow","workflow":"flaky","on_failure":"continue"},
			{"name":"handler","job_id":%d},{"name":"sub_s","kind":"workflow","workflow":"flaky","on_failure":"skip"},{"name":"next","job_id":%d}],
			"edges":[{"from":"sub_c","to":"handler","when":"on_failure"},{"from":"sub_s","to":"next"}]}`, "", jobs["handler"].ID, jobs["next"].ID)
		strict := insertWorkflow(t, st, "strict", `{"nodes":[{"name":"sub_f","kind":"workflow","workflow":"flaky"},{"name":"after","job_id":%d}],
			"edges":[{"from":"sub_f","to":"after"}]}`, "", jobs["after"].ID)
		led := newLedger()
		var mu sync.Mutex
		xFails := true
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"x": led.handle("n1", func(WorkflowInput, *Fire) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if xFails {
					return nil, errors.New("x broke")
				}
				return "fixed", nil
			}),
			"handler": led.handle("n1", nil),
			"next":    led.handle("n1", nil),
			"after":   led.handle("n1", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["sub_f"], nil }),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)

		run, err := e.StartWorkflow(ctx, lenient.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes := waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"sub_c": "failed", "handler": "succeeded", "sub_s": "skipped", "next": "skipped"})
		if !strings.Contains(nodes["sub_c"].Message, "failed") || nodes["sub_c"].ChildRun == 0 {
			t.Errorf("sub_c %+v: want it failed by its child run, linked", nodes["sub_c"])
		}

		run, err = e.StartWorkflow(ctx, strict.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		run, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "failed", map[string]string{"sub_f": "failed", "after": "canceled"})
		first := nodes["sub_f"].ChildRun
		if cr, err := st.WorkflowRunGet(ctx, first); err != nil || cr.State != "failed" || !strings.Contains(cr.Message, "x failed") {
			t.Errorf("sub_f's child run %+v, %v: want it failed by x", cr, err)
		}

		mu.Lock()
		xFails = false
		mu.Unlock()
		if _, err := e.RetryWorkflowNode(ctx, run.ID, "sub_f"); err != nil {
			t.Fatal(err)
		}
		run, nodes = waitRun(t, e, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"sub_f": "succeeded", "after": "succeeded"})
		if nodes["sub_f"].ChildRun == first || nodes["sub_f"].ChildRun == 0 {
			t.Errorf("retried sub_f's child run is %d (first %d): want a new one", nodes["sub_f"].ChildRun, first)
		}
		if nodes["after"].Result != `{"x":"fixed"}` {
			t.Errorf("after's result %s: want the retried child's", nodes["after"].Result)
		}
		// flaky ran for sub_c, sub_s, sub_f and its retry.
		if n := len(childRuns(t, st, child)); n != 4 {
			t.Errorf("flaky has %d runs, want 4", n)
		}
	})
}

// TestSubWorkflowRecursion refuses, against the stored workflows, a sub-workflow reference
// that leads back (directly or through a chain) with the path named, and one to a workflow
// that does not exist.
func TestSubWorkflowRecursion(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "j")
		insertWorkflow(t, st, "B", `{"nodes":[{"name":"j","job_id":%d}]}`, "", jobs["j"].ID)
		insertWorkflow(t, st, "A", `{"nodes":[{"name":"b","kind":"workflow","workflow":"B"}]}`, "")
		check := func(name, graph, field, msg string) {
			t.Helper()
			g, err := ParseGraph(graph)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckSubWorkflows(ctx, st, name, g)
			var fe *schedule.FieldError
			if msg == "" {
				if err != nil {
					t.Errorf("%s: %v, want it accepted", name, err)
				}
				return
			}
			if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: %v, want a field error at %s saying %q", name, err, field, msg)
			}
		}
		check("B", `{"nodes":[{"name":"j","job_id":1},{"name":"a","kind":"workflow","workflow":"A"}]}`, "nodes[1].workflow", "recursion: B -> A -> B")
		check("A", `{"nodes":[{"name":"me","kind":"workflow","workflow":"A"}]}`, "nodes[0].workflow", "recursion: A -> A")
		check("C", `{"nodes":[{"name":"a","kind":"workflow","workflow":"A"},{"name":"b","kind":"workflow","workflow":"B"}]}`, "", "")
		check("C", `{"nodes":[{"name":"z","kind":"workflow","workflow":"nope"}]}`, "nodes[0].workflow", `"nope" does not exist`)
		apps, err := WorkflowApps(ctx, st, mustGraph(t, `{"nodes":[{"name":"a","kind":"workflow","workflow":"A"}]}`))
		if err != nil || fmt.Sprint(apps) != fmt.Sprint([]string{jobs["j"].App}) {
			t.Errorf("apps through A -> B: %q, %v; want B's job's app", apps, err)
		}
	})
}

func mustGraph(t *testing.T, src string) *workflow.Graph {
	t.Helper()
	g, err := ParseGraph(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSubWorkflowCancel cancels a parent run whose sub-workflow node runs: the child run is
// canceled with it and the child's running execution killed; a parent's timeout does the same.
func TestSubWorkflowCancel(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "x", "b")
		insertWorkflow(t, st, "slow", `{"nodes":[{"name":"x","job_id":%d}]}`, "", jobs["x"].ID)
		parent := insertWorkflow(t, st, "outer", `{"timeout_ms":60000,"nodes":[{"name":"sub","kind":"workflow","workflow":"slow"},{"name":"b","job_id":%d}],
			"edges":[{"from":"sub","to":"b"}]}`, "", jobs["b"].ID)
		led := newLedger()
		started := make(chan int64, 1)
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"x": func(ctx context.Context, f *Fire) Result {
				started <- f.Execution.ID
				<-ctx.Done() // killed with its run
				return led.handle("n1", nil)(ctx, f)
			},
			"b": led.handle("n1", nil),
		})
		e := newEngine(t, st, rec, "n1", clock.Real{}, nil)
		startEngine(t, e)
		for _, how := range []string{"cancel", "timeout"} {
			run, err := e.StartWorkflow(ctx, parent.ID, "", store.CauseManual)
			if err != nil {
				t.Fatal(err)
			}
			x := waitFor(t, "x to start", started, 1)[0]
			_, nodes := runState(t, st, run.ID)
			childID := nodes["sub"].ChildRun
			if how == "cancel" {
				if ok, err := e.CancelWorkflowRun(ctx, run.ID, "canceled by test"); !ok || err != nil {
					t.Fatalf("cancel: %v, %v", ok, err)
				}
			} else if n, err := e.timeOutWorkflowsAt(ctx, time.UnixMilli(run.DeadlineAt)); n != 1 || err != nil {
				t.Fatalf("timeout: %d ended, %v", n, err)
			}
			for {
				if id := waitFor(t, "x's end", e.signals.completed, 1)[0]; id == x {
					break
				}
			}
			got, nodes := runState(t, st, run.ID)
			want := map[string]string{"cancel": "canceled", "timeout": "failed"}[how]
			wantStates(t, got, nodes, want, map[string]string{"sub": "canceled"})
			child, cnodes := runState(t, st, childID)
			wantStates(t, child, cnodes, "canceled", map[string]string{"x": "canceled"})
			if xe, err := st.ExecutionGet(ctx, x); err != nil || xe.State != store.ExecCanceled {
				t.Errorf("%s: x's execution %+v, %v: want it killed", how, xe, err)
			}
		}
		if led.count("b") != 0 {
			t.Error("b ran after its run ended")
		}
	})
}

// TestSubWorkflowNodeCrash kills the node running a parent run while the child's last node
// y runs on it (the child run started, the sub-workflow node not yet moved): a survivor
// recovers y, whose end ends the child run and moves the node in one transaction; b follows.
// No second child run starts and no node row or first execution is made twice.
func TestSubWorkflowNodeCrash(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, func(j *store.Job) { j.RequestsRecovery = true }, "a", "x", "y", "b")
		child := insertWorkflow(t, st, "inner", `{"nodes":[{"name":"x","job_id":%d},{"name":"y","job_id":%d}],"edges":[{"from":"x","to":"y"}]}`, "",
			jobs["x"].ID, jobs["y"].ID)
		parent := insertWorkflow(t, st, "outer", `{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":"inner"},{"name":"b","job_id":%d}],
			"edges":[{"from":"a","to":"sub"},{"from":"sub","to":"b"}]}`, "", jobs["a"].ID, jobs["b"].ID)
		led := newLedger()
		yStarted := make(chan struct{}, 1)
		victimRec := newRecorder()
		victimRec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"a": led.handle("victim", func(WorkflowInput, *Fire) (any, error) { return "from a", nil }),
			"x": led.handle("victim", func(WorkflowInput, *Fire) (any, error) { return "from x", nil }),
			"y": func(ctx context.Context, f *Fire) Result {
				res := led.handle("victim", nil)(ctx, f)
				yStarted <- struct{}{}
				<-ctx.Done() // the node dies with y running: its end is never written
				return res
			},
		})
		victim := newEngine(t, st, victimRec, "victim", clock.Real{}, nil)
		startEngine(t, victim)
		run, err := victim.StartWorkflow(ctx, parent.ID, "", store.CauseManual)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "y to start on the victim", yStarted, 1)
		_, nodes := runState(t, st, run.ID)
		wantStates(t, &store.WorkflowRun{ID: run.ID, State: "running"}, nodes, "running", map[string]string{"a": "succeeded", "sub": "running"})
		victim.abandon()

		survivorRec := newRecorder()
		survivorRec.behave = byHandler(map[string]func(context.Context, *Fire) Result{
			"y": led.handle("survivor", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["x"], nil }),
			"b": led.handle("survivor", func(in WorkflowInput, _ *Fire) (any, error) { return in.Parents["sub"], nil }),
		})
		survivor := newEngine(t, st, survivorRec, "survivor", clock.Real{}, nil)
		startEngine(t, survivor)
		recoverWhileLeading(t, survivor)
		run, nodes = waitRun(t, survivor, st, run.ID)
		wantStates(t, run, nodes, "succeeded", map[string]string{"a": "succeeded", "sub": "succeeded", "b": "succeeded"})
		if nodes["b"].Result != `{"y":"from x"}` {
			t.Errorf("b's result %s: want the recovered y's result through sub", nodes["b"].Result)
		}
		led.mu.Lock()
		if got := fmt.Sprint(led.runs); got != "map[a:[victim] b:[survivor] x:[victim] y:[victim survivor]]" {
			t.Errorf("ledger %s: want y on the victim and recovered on the survivor, the rest once", got)
		}
		led.mu.Unlock()
		runs := childRuns(t, st, child)
		if len(runs) != 1 || runs[0].ID != nodes["sub"].ChildRun || runs[0].State != "succeeded" {
			t.Fatalf("inner's runs %+v: want one, the sub node's, succeeded", runs)
		}
		_, cnodes := runState(t, st, runs[0].ID)
		perNode := firstExecutions(t, st)
		for _, ns := range []map[string]*store.WorkflowNode{nodes, cnodes} {
			for name, n := range ns {
				if want := map[bool]int{true: 0, false: 1}[name == "sub"]; perNode[n.ID] != want {
					t.Errorf("node %s has %d first executions, want %d", name, perNode[n.ID], want)
				}
			}
		}
	})
}
