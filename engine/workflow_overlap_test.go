package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/store"
)

// runGates hold each workflow run's node until the test opens its gate, and keep the
// timeline of starts and ends outside the database ("start 1", "end 1", "killed 1"; runs
// numbered in the order the test started them).
type runGates struct {
	mu      sync.Mutex
	gates   map[int64]chan struct{}
	num     map[int64]int
	events  []event
	started chan int64 // the run id of each node start
}

func newRunGates() *runGates {
	return &runGates{gates: map[int64]chan struct{}{}, num: map[int64]int{}, started: make(chan int64, 100)}
}

func (g *runGates) gate(run int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[run] == nil {
		g.gates[run] = make(chan struct{})
	}
	return g.gates[run]
}

type event struct {
	what string
	run  int64
}

func (g *runGates) event(what string, run int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, event{what, run})
}

func (g *runGates) handle(ctx context.Context, f *Fire) Result {
	var in WorkflowInput
	if err := json.Unmarshal([]byte(f.WorkflowInput), &in); err != nil {
		return Result{Err: err}
	}
	g.event("start", in.RunID)
	g.started <- in.RunID
	select {
	case <-g.gate(in.RunID):
		g.event("end", in.RunID)
		return Result{}
	case <-ctx.Done():
		g.event("killed", in.RunID)
		return Result{Err: context.Cause(ctx)}
	}
}

func (g *runGates) timeline() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.events))
	for i, ev := range g.events {
		out[i] = fmt.Sprintf("%s %d", ev.what, g.num[ev.run])
	}
	return out
}

// overlapFixture is a one-node workflow with policy on two engines sharing a store.
type overlapFixture struct {
	t    *testing.T
	st   store.Store
	es   [2]*Engine
	w    *store.Workflow
	g    *runGates
	runs []int64
}

func newOverlapFixture(t *testing.T, dialect, policy string, max int) *overlapFixture {
	st := openStore(t, dialect)
	f := &overlapFixture{t: t, st: st, g: newRunGates()}
	jobs := wfJobs(t, st, nil, "a")
	f.w = insertWorkflow(t, st, "ov", `{"nodes":[{"name":"a","job_id":%d}]}`, "", jobs["a"].ID)
	f.w.Concurrency, f.w.MaxConcurrent = policy, max
	if err := st.WorkflowUpdate(context.Background(), f.w); err != nil {
		t.Fatal(err)
	}
	for i, node := range []string{"n1", "n2"} {
		rec := newRecorder()
		rec.behave = byHandler(map[string]func(context.Context, *Fire) Result{"a": f.g.handle})
		f.es[i] = newEngine(t, st, rec, node, clock.Real{}, nil)
		startEngine(t, f.es[i])
	}
	return f
}

// start starts a run through engine i, numbers it, and wants it stored in state want.
func (f *overlapFixture) start(i int, want string) *store.WorkflowRun {
	f.t.Helper()
	run, err := f.es[i].StartWorkflow(context.Background(), f.w.ID, "", store.CauseManual)
	if err != nil {
		f.t.Fatal(err)
	}
	f.g.mu.Lock()
	f.g.num[run.ID] = len(f.runs) + 1
	f.g.mu.Unlock()
	f.runs = append(f.runs, run.ID)
	if run.State != want {
		f.t.Fatalf("run %d starts %s (%s), want %s", len(f.runs), run.State, run.Message, want)
	}
	return run
}

// waitStarted waits for the node of run n (1-based) to start.
func (f *overlapFixture) waitStarted(n int) {
	f.t.Helper()
	if id := waitFor(f.t, fmt.Sprintf("run %d's node to start", n), f.g.started, 1)[0]; id != f.runs[n-1] {
		f.t.Fatalf("run %d's node started, want run %d's", slices.Index(f.runs, id)+1, n)
	}
}

// finish opens run n's gate and waits for the run to end on the engine that ran its node.
func (f *overlapFixture) finish(n int) {
	f.t.Helper()
	close(f.g.gate(f.runs[n-1]))
	f.waitEnded(n)
}

func (f *overlapFixture) waitEnded(n int) {
	f.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case id := <-f.es[0].signals.workflows:
			if id == f.runs[n-1] {
				return
			}
		case id := <-f.es[1].signals.workflows:
			if id == f.runs[n-1] {
				return
			}
		case <-deadline:
			f.t.Fatalf("run %d did not end", n)
		}
	}
}

// states wants the runs' states, in the order started.
func (f *overlapFixture) states(want ...string) {
	f.t.Helper()
	for i, id := range f.runs {
		r, err := f.st.WorkflowRunGet(context.Background(), id)
		if err != nil {
			f.t.Fatal(err)
		}
		if r.State != want[i] {
			f.t.Errorf("run %d is %s (%s), want %s", i+1, r.State, r.Message, want[i])
		}
	}
}

func (f *overlapFixture) wantTimeline(want ...string) {
	f.t.Helper()
	if got := f.g.timeline(); !slices.Equal(got, want) {
		f.t.Errorf("timeline %q, want %q", got, want)
	}
}

// TestWorkflowOverlap runs a workflow's overlap policies on two engines: each run is started
// on one engine or the other, so the policy holds across the cluster only if it is decided in
// the database. The ledger of node starts and ends is kept outside it.
func TestWorkflowOverlap(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		t.Run("skip", func(t *testing.T) {
			f := newOverlapFixture(t, dialect, "skip", 0)
			f.start(0, "running")
			f.waitStarted(1)
			r2 := f.start(1, "skipped")
			if !strings.Contains(r2.Message, "overlap policy skip") {
				t.Errorf("run 2's message %q", r2.Message)
			}
			f.finish(1)
			f.start(1, "running")
			f.waitStarted(3)
			f.finish(3)
			f.states("succeeded", "skipped", "succeeded")
			f.wantTimeline("start 1", "end 1", "start 3", "end 3")
		})
		t.Run("buffer_all", func(t *testing.T) {
			f := newOverlapFixture(t, dialect, "serial", 0) // the old name, still accepted
			f.start(0, "running")
			f.waitStarted(1)
			f.start(1, "queued")
			f.start(0, "queued")
			f.states("running", "queued", "queued")
			f.finish(1)
			f.waitStarted(2)
			f.states("succeeded", "running", "queued")
			f.finish(2)
			f.waitStarted(3)
			f.finish(3)
			f.states("succeeded", "succeeded", "succeeded")
			f.wantTimeline("start 1", "end 1", "start 2", "end 2", "start 3", "end 3")
		})
		t.Run("at_most_2", func(t *testing.T) {
			f := newOverlapFixture(t, dialect, "at_most", 2)
			f.start(0, "running")
			f.waitStarted(1)
			f.start(1, "running")
			f.waitStarted(2)
			f.start(0, "queued")
			f.start(1, "queued")
			f.finish(2)
			f.waitStarted(3)
			f.states("running", "succeeded", "running", "queued")
			f.finish(1)
			f.waitStarted(4)
			f.finish(3)
			f.finish(4)
			f.states("succeeded", "succeeded", "succeeded", "succeeded")
			f.wantTimeline("start 1", "start 2", "end 2", "start 3", "end 1", "start 4", "end 3", "end 4")
		})
		t.Run("terminate", func(t *testing.T) {
			f := newOverlapFixture(t, dialect, "terminate", 0)
			f.start(0, "running")
			f.waitStarted(1)
			f.start(1, "running")
			f.waitStarted(2)
			f.waitEnded(1)
			r1, nodes := runState(t, f.st, f.runs[0])
			if r1.State != "canceled" || !strings.Contains(r1.Message, "overlap policy terminate") {
				t.Errorf("run 1 is %s (%s), want canceled by the terminate policy", r1.State, r1.Message)
			}
			// The node's execution was killed (its handler's context ended), not left running.
			for {
				x, err := f.st.ExecutionGet(context.Background(), nodes["a"].ExecutionID)
				if err != nil {
					t.Fatal(err)
				}
				if x.State == store.ExecCanceled {
					break
				}
				if x.State != store.ExecRunning {
					t.Fatalf("run 1's node execution is %s, want canceled", x.State)
				}
				waitFor(t, "run 1's node execution to end", f.anyCompleted(), 1)
			}
			f.finish(2)
			f.states("canceled", "succeeded")
			got := f.g.timeline()
			if len(got) != 4 || got[0] != "start 1" || !slices.Contains(got, "killed 1") || !slices.Contains(got, "start 2") || got[3] != "end 2" {
				t.Errorf("timeline %q, want start 1, then start 2 and killed 1 in either order, then end 2", got)
			}
		})
	})
}

// anyCompleted merges both engines' completion signals.
func (f *overlapFixture) anyCompleted() <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		select {
		case id := <-f.es[0].signals.completed:
			out <- id
		case id := <-f.es[1].signals.completed:
			out <- id
		case <-time.After(60 * time.Second):
		}
	}()
	return out
}

// TestWorkflowStartRacesDelete starts runs and deletes the workflow at once, from two
// goroutines: either the delete comes first and the start finds no workflow, or the start
// does and the delete refuses (a running run); never a run outliving its workflow.
func TestWorkflowStartRacesDelete(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		ctx := context.Background()
		jobs := wfJobs(t, st, nil, "a")
		e := newEngine(t, st, newRecorder(), "n1", clock.Real{}, nil) // not started: runs stay running
		for i := range 20 {
			w := insertWorkflow(t, st, fmt.Sprintf("race%d", i), `{"nodes":[{"name":"a","job_id":%d}]}`, "", jobs["a"].ID)
			var wg sync.WaitGroup
			var startErr, delErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, startErr = e.StartWorkflow(ctx, w.ID, "", store.CauseManual)
			}()
			go func() {
				defer wg.Done()
				delErr = store.InTx(ctx, st, func(q store.Querier) error { return DeleteWorkflow(ctx, q, w.ID) })
			}()
			wg.Wait()
			runs, err := st.WorkflowRunList(ctx, w.ID, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			_, getErr := st.WorkflowGet(ctx, w.ID)
			switch {
			case startErr == nil && errors.As(delErr, new(*StateError)):
				if getErr != nil || len(runs) != 1 {
					t.Fatalf("round %d: start won, yet the workflow is %v with %d runs", i, getErr, len(runs))
				}
			case errors.Is(startErr, store.ErrNotFound) && delErr == nil:
				if !errors.Is(getErr, store.ErrNotFound) || len(runs) != 0 {
					t.Fatalf("round %d: delete won, yet %d runs were stored (workflow: %v)", i, len(runs), getErr)
				}
			default:
				t.Fatalf("round %d: start %v, delete %v", i, startErr, delErr)
			}
		}
	})
}
