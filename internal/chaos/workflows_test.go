package chaos

import (
	"strings"
	"testing"
)

// TestCheckWorkflows classifies hand-made workflow runs: a clean diamond; one whose node ran
// again after succeeding; one whose child began before its parent ended; a run left running;
// and a node re-run after its first run was cut (a recovery, not a double).
func TestCheckWorkflows(t *testing.T) {
	spec := &WorkflowSpec{ID: 1, Jobs: map[string]int64{"a": 1, "b": 2, "c": 3, "d": 4}, Edges: diamond}
	var ledger []Entry
	run := func(exec, at int64, ok bool, ends bool) {
		ledger = append(ledger, Entry{Ev: "begin", ExecID: exec, At: at})
		if ends {
			ledger = append(ledger, Entry{Ev: "end", ExecID: exec, At: at + 10, OK: ok})
		}
	}
	node := func(id int64, name string, execs ...int64) WFNode {
		return WFNode{ID: id, Node: name, State: "succeeded", Execs: execs}
	}
	// Run 1: a(100) → b(200), c(201) → d(300): clean.
	run(100, 1000, true, true)
	run(200, 1020, true, true)
	run(201, 1020, true, true)
	run(300, 1040, true, true)
	// Run 2: a ran twice, both succeeded (double); d began before c ended (early).
	run(110, 2000, true, true)
	run(111, 2100, true, true)
	run(210, 2200, true, true)
	run(211, 2200, true, true)
	run(310, 2205, true, true)
	// Run 3: still running. Run 4: b's first run cut (no end), recovered by 421.
	run(130, 3000, true, true)
	run(140, 4000, true, true)
	run(420, 4020, false, false)
	run(421, 4100, true, true)
	run(422, 4020, true, true)
	run(440, 4200, true, true)
	runs := []WFRun{
		{ID: 1, State: "succeeded", Nodes: []WFNode{node(1, "a", 100), node(2, "b", 200), node(3, "c", 201), node(4, "d", 300)}},
		{ID: 2, State: "succeeded", Nodes: []WFNode{node(5, "a", 110, 111), node(6, "b", 210), node(7, "c", 211), node(8, "d", 310)}},
		{ID: 3, State: "running", Nodes: []WFNode{node(9, "a", 130)}},
		{ID: 4, State: "succeeded", Nodes: []WFNode{node(10, "a", 140), node(11, "b", 420, 421), node(12, "c", 422), node(13, "d", 440)}},
	}
	r := CheckWorkflows(spec, runs, ledger, nil)
	t.Log(r)
	if r.Runs != 4 || r.Succeeded != 3 || r.Unfinished != 1 || r.Double != 1 || r.EarlyStarts != 2 || r.Recovered != 1 || r.Lost != 0 {
		t.Errorf("report %+v: want 4 runs, 3 succeeded, 1 unfinished, 1 double, 2 early starts (d before b and c), 1 recovered, 0 lost", r)
	}
	if got := strings.Join(r.Targets(), ", "); !strings.Contains(got, "1 workflow runs unfinished") || !strings.Contains(got, "1 workflow nodes run twice") {
		t.Errorf("targets %q", got)
	}
	// Run 2's double is justified when the process of a's first, successful run was killed
	// after it began (before its result was stored).
	for i := range ledger {
		if ledger[i].ExecID == 110 {
			ledger[i].Proc = "node1:n1:1"
		}
	}
	if r := CheckWorkflows(spec, runs, ledger, []Proc{{Name: "node1:n1:1", Killed: 2050}}); r.Double != 0 || r.Recovered != 2 {
		t.Errorf("double %d, recovered %d with the first run's process killed: want 0, 2", r.Double, r.Recovered)
	}
	// A child begun after its parent's first success is not early when the parent ran again
	// (its first process killed after the success was stored) and succeeded later too.
	run(160, 6000, true, true)
	run(161, 6100, true, true)
	run(260, 6050, true, true)
	run(261, 6050, true, true)
	run(360, 6200, true, true)
	rerun := []WFRun{{ID: 6, State: "succeeded", Nodes: []WFNode{node(15, "a", 160, 161), node(16, "b", 260), node(17, "c", 261), node(18, "d", 360)}}}
	if r := CheckWorkflows(spec, rerun, ledger, nil); r.EarlyStarts != 0 {
		t.Errorf("early starts %d for children begun after the parent's first success, want 0: %v", r.EarlyStarts, r.Findings)
	}
	// A succeeded node whose success the ledger lacks is lost.
	r = CheckWorkflows(spec, []WFRun{{ID: 5, State: "succeeded", Nodes: []WFNode{node(14, "a", 999)}}}, ledger, nil)
	if r.Lost != 1 {
		t.Errorf("lost %d, want 1", r.Lost)
	}
}
