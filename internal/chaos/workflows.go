package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// The workflow load: a diamond (a → b, a → c, b → d, c → d) whose nodes run the ledger
// handler in-process (100–400 ms), each job retrying twice and requesting recovery, started once every
// Options.WorkflowEvery during the load. The nodes' executions are the cluster's like any
// fire's, so the faults hit them mid-run; the checker (CheckWorkflows) wants each node of
// each run to have run once, after its parents, and every run to end.

// WorkflowSpec is the workflow load as the suite created it.
type WorkflowSpec struct {
	ID int64
	// Jobs maps each node to the job it runs.
	Jobs  map[string]int64
	Edges []workflow.Edge
}

var diamond = []workflow.Edge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}}

func (c *cluster) scheduleWorkflows(ctx context.Context) (*WorkflowSpec, error) {
	sched, err := sundial.New(sundial.Config{Store: c.st})
	if err != nil {
		return nil, err
	}
	spec := &WorkflowSpec{Jobs: map[string]int64{}, Edges: diamond}
	g := workflow.Graph{Edges: diamond}
	for _, n := range []string{"a", "b", "c", "d"} {
		params, _ := json.Marshal(JobParams{RunMs: 100 + c.rng.IntN(300)})
		id, err := sched.ScheduleJob(ctx, sundial.Job{Name: "chaos-wf-" + n, Handler: "ledger", Params: string(params),
			RequestsRecovery: true, MaxRetries: 2, RetryBackoff: 200 * time.Millisecond})
		if err != nil {
			return nil, fmt.Errorf("chaos: workflow job %s: %w", n, err)
		}
		spec.Jobs[n] = id
		g.Nodes = append(g.Nodes, workflow.Node{Name: n, JobID: id})
	}
	graph, _ := json.Marshal(g)
	w := &store.Workflow{Name: "chaos-diamond", Graph: string(graph)}
	if err := store.InTx(ctx, c.st, func(q store.Querier) error { return q.WorkflowInsert(ctx, w) }); err != nil {
		return nil, fmt.Errorf("chaos: workflow: %w", err)
	}
	spec.ID = w.ID
	return spec, nil
}

// startWorkflows starts a run of the workflow every Options.WorkflowEvery from start until end,
// straight on the database (as an API call would, through the engine's StartWorkflow); a
// start the database refuses (it is down) is skipped. The returned wait ends with the last.
func (c *cluster) startWorkflows(ctx context.Context, spec *WorkflowSpec, start, end time.Time) (wait func()) {
	sched, err := sundial.New(sundial.Config{Store: c.st})
	if err != nil {
		c.logf("workflow load: %v", err)
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		started, refused := 0, 0
		for at := start; at.Before(end); at = at.Add(c.o.WorkflowEvery) {
			select {
			case <-time.After(time.Until(at)):
			case <-ctx.Done():
				return
			}
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := sched.Engine().StartWorkflow(sctx, spec.ID, "", store.CauseAPI)
			cancel()
			if err != nil {
				refused++
				continue
			}
			started++
		}
		c.logf("workflow load: %d runs started, %d starts refused by the database", started, refused)
	}()
	return wg.Wait
}

// WFRun is one workflow run as the database holds it after the settle.
type WFRun struct {
	ID      int64
	State   string
	Message string
	Nodes   []WFNode
}

// WFNode is one node of a run and its executions (every attempt).
type WFNode struct {
	ID    int64
	Node  string
	State string
	Execs []int64
}

// WorkflowReport is the checker's verdict on the workflow load.
type WorkflowReport struct {
	Runs, Succeeded, Failed int
	// Unfinished counts the runs still running after the settle (target 0).
	Unfinished int
	// NodeRuns counts the handler runs of workflow nodes the ledger holds.
	NodeRuns int
	// Double counts nodes of a run whose handler began again after a run of it had
	// succeeded (target 0); Lost the nodes of a succeeded run with no successful run in the
	// ledger (target 0); EarlyStarts the nodes begun before a parent's successful end
	// (target 0).
	Double, Lost, EarlyStarts int
	// Recovered counts nodes run more than once because their run was cut by a fault
	// (failed, or killed mid-run): retries and recoveries, as the jobs ask.
	Recovered int
	// FailedBy lists, for failed runs, their messages (up to a few).
	FailedBy []string
	Findings []string
}

// Targets lists the workflow targets missed.
func (r *WorkflowReport) Targets() []string {
	var out []string
	for _, x := range []struct {
		n    int
		what string
	}{{r.Unfinished, "workflow runs unfinished"}, {r.Double, "workflow nodes run twice"},
		{r.Lost, "workflow nodes lost"}, {r.EarlyStarts, "workflow nodes begun before a parent ended"}} {
		if x.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	if r.Runs == 0 {
		out = append(out, "no workflow run started")
	}
	return out
}

func (r *WorkflowReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflows: %d runs (%d succeeded, %d failed, %d unfinished), %d node runs in the ledger\n",
		r.Runs, r.Succeeded, r.Failed, r.Unfinished, r.NodeRuns)
	fmt.Fprintf(&b, "  nodes run twice %d, lost %d, begun before a parent ended %d, re-run after a fault %d\n",
		r.Double, r.Lost, r.EarlyStarts, r.Recovered)
	for _, m := range r.FailedBy {
		fmt.Fprintf(&b, "  failed: %s\n", m)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

// CheckWorkflows checks the workflow load's runs against the ledger: every node of every run
// ran once (a node begun again after one of its runs succeeded is double), after each parent
// succeeded, and each run ended; a succeeded run's nodes each have a successful run in the
// ledger. It is pure, like Check.
//
// A run begun again after a success is justified (counted in Recovered, not Double) when the
// process of the successful run died after it began — killed, or frozen past the node timeout
// — before its result could be stored, as Check justifies a fire's re-run.
func CheckWorkflows(spec *WorkflowSpec, runs []WFRun, ledger []Entry, procs []Proc) *WorkflowReport {
	r := &WorkflowReport{Runs: len(runs)}
	byName := map[string]Proc{}
	for _, p := range procs {
		byName[p.Name] = p
	}
	// died reports whether the process of e died after e began.
	died := func(e Entry) bool {
		p, ok := byName[e.Proc]
		return ok && ((p.Killed != 0 && p.Killed >= e.At) || (p.Frozen != 0 && p.Thawed >= e.At))
	}
	// A node succeeds more than once when a fault re-ran it after its first success (excused
	// below when that success's process died). A child is early only when it began before
	// the parent's first success: the engine starts it from a recorded success, and a later
	// success is the re-run's.
	type span struct{ firstBegin, firstOKEnd, okEnds int64 }
	begins := map[int64][]Entry{} // by execution
	ends := map[int64][]Entry{}
	for _, e := range ledger {
		switch e.Ev {
		case "begin":
			begins[e.ExecID] = append(begins[e.ExecID], e)
		case "end":
			ends[e.ExecID] = append(ends[e.ExecID], e)
		}
	}
	find := func(f string, args ...any) {
		if len(r.Findings) < 10 {
			r.Findings = append(r.Findings, fmt.Sprintf(f, args...))
		}
	}
	for _, run := range runs {
		switch run.State {
		case string(workflow.RunSucceeded):
			r.Succeeded++
		case string(workflow.RunFailed):
			r.Failed++
			if len(r.FailedBy) < 5 {
				r.FailedBy = append(r.FailedBy, fmt.Sprintf("run %d: %s", run.ID, run.Message))
			}
		case string(workflow.RunRunning):
			r.Unfinished++
			find("run %d still running after the settle", run.ID)
		}
		nodes := map[string]span{}
		for _, n := range run.Nodes {
			var bs, oks []Entry
			for _, x := range n.Execs {
				bs = append(bs, begins[x]...)
				for _, e := range ends[x] {
					if e.OK {
						oks = append(oks, e)
					}
				}
			}
			r.NodeRuns += len(bs)
			sort.Slice(bs, func(i, j int) bool { return bs[i].At < bs[j].At })
			sort.Slice(oks, func(i, j int) bool { return oks[i].At < oks[j].At })
			s := span{okEnds: int64(len(oks))}
			if len(bs) > 0 {
				s.firstBegin = bs[0].At
			}
			if len(oks) > 0 {
				s.firstOKEnd = oks[0].At
			}
			nodes[n.Node] = s
			again := len(oks) > 0 && bs[len(bs)-1].At > oks[0].At
			justified := len(oks) > 0 && died(oks[0])
			switch {
			case again && !justified:
				r.Double++
				var who []string
				for _, b := range bs {
					who = append(who, fmt.Sprintf("exec %d on %s at %d", b.ExecID, b.Proc, b.At))
				}
				find("run %d node %s: %d runs begun, %d succeeded, one begun after a success: %s", run.ID, n.Node, len(bs), len(oks),
					strings.Join(who, "; "))
			case len(bs) > 1:
				r.Recovered++
			}
			if run.State == string(workflow.RunSucceeded) && len(oks) == 0 && n.State == string(workflow.Succeeded) {
				r.Lost++
				find("run %d node %s: succeeded in the database, no successful run in the ledger", run.ID, n.Node)
			}
		}
		for _, e := range spec.Edges {
			p, ch := nodes[e.From], nodes[e.To]
			if ch.firstBegin != 0 && (p.okEnds == 0 || ch.firstBegin < p.firstOKEnd) {
				r.EarlyStarts++
				find("run %d: node %s began before its parent %s succeeded", run.ID, e.To, e.From)
			}
		}
	}
	return r
}

// readWorkflows reads the workflow load's runs, their nodes and their executions.
func (c *cluster) readWorkflows(ctx context.Context, spec *WorkflowSpec, db []DBExec) ([]WFRun, error) {
	byNode := map[int64][]int64{}
	for _, d := range db {
		if d.WorkflowNode != 0 {
			byNode[d.WorkflowNode] = append(byNode[d.WorkflowNode], d.ID)
		}
	}
	var out []WFRun
	var before int64
	for {
		page, err := c.st.WorkflowRunList(ctx, spec.ID, before, 500)
		if err != nil {
			return nil, fmt.Errorf("chaos: workflow runs: %w", err)
		}
		for _, run := range page {
			ns, err := c.st.WorkflowNodes(ctx, run.ID)
			if err != nil {
				return nil, fmt.Errorf("chaos: workflow run %d: %w", run.ID, err)
			}
			r := WFRun{ID: run.ID, State: run.State, Message: run.Message}
			for _, n := range ns {
				r.Nodes = append(r.Nodes, WFNode{ID: n.ID, Node: n.Node, State: n.State, Execs: byNode[n.ID]})
			}
			out = append(out, r)
		}
		if len(page) < 500 {
			return out, nil
		}
		before = page[len(page)-1].ID
	}
}
