package workflow

// State is a node's state in one run.
type State string

// The node states. Pending nodes have not started; the rest but running are final.
const (
	Pending   State = "pending"
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Skipped   State = "skipped"
	// True and False are the outcomes of a decision node.
	True  State = "true"
	False State = "false"
	// Canceled nodes did not start because the run failed or was canceled first.
	Canceled State = "canceled"
)

// Final reports whether s is a state a node ends in.
func (s State) Final() bool { return s != Pending && s != Running && s != "" }

// RunState is the state of a workflow run.
type RunState string

// The run states.
const (
	RunRunning   RunState = "running"
	RunSucceeded RunState = "succeeded"
	RunFailed    RunState = "failed"
	RunCanceled  RunState = "canceled"
	// RunQueued waits, without nodes, for the earlier runs its workflow's overlap policy
	// waits for; RunSkipped never ran (the policy dropped it).
	RunQueued  RunState = "queued"
	RunSkipped RunState = "skipped"
)

// holds reports whether an edge's condition holds for its parent's final state: never for a
// parent not finished.
func holds(when Condition, parent State) bool {
	switch when {
	case Always:
		return parent.Final()
	case OnSuccess:
		return parent == Succeeded
	case OnFailure:
		return parent == Failed
	case IfTrue:
		return parent == True
	case IfFalse:
		return parent == False
	}
	return false
}

// Outcome is a job node's end as its handling makes it: a failure of a node whose on_failure
// is skip counts as skipped; the run fails when a node whose on_failure is fail failed.
func (n Node) Outcome(succeeded bool) (State, bool) {
	switch {
	case succeeded:
		return Succeeded, false
	case n.OnFailure == Skip:
		return Skipped, false
	case n.OnFailure == Continue:
		return Failed, false
	}
	return Failed, true
}

// Step is what a run does next, given the state of every node (a node absent is pending) and
// whether the run has failed: the nodes to start (job and decision nodes that are ready), the
// nodes to record skipped (their conditions can no longer hold; skipping propagates, so a skipped
// node's children are judged again in the same call), and the run's state afterwards. After
// a failure nothing starts: the pending nodes are canceled, and the run ends failed once the
// running ones end.
//
// A node is ready when every parent has finished and the condition of every incoming edge
// holds (always holds for any final state, skipped included, so cleanup after a branch not
// taken still runs); it is skipped when every parent has finished and one condition does not
// hold.
// A node without parents is ready at once.
func (g *Graph) Step(states map[string]State, failed bool) (start, skip, cancel []string, run RunState) {
	parents := g.parents()
	cur := make(map[string]State, len(g.Nodes))
	for _, n := range g.Nodes {
		cur[n.Name] = states[n.Name]
		if cur[n.Name] == "" {
			cur[n.Name] = Pending
		}
	}
	if failed {
		running := false
		for _, n := range g.Nodes {
			switch cur[n.Name] {
			case Pending:
				cancel = append(cancel, n.Name)
			case Running:
				running = true
			}
		}
		if running {
			return nil, nil, cancel, RunRunning
		}
		return nil, nil, cancel, RunFailed
	}
	for changed := true; changed; {
		changed = false
		for _, n := range g.Nodes {
			if cur[n.Name] != Pending {
				continue
			}
			all, hold := true, true
			for _, e := range parents[n.Name] {
				p := cur[e.From]
				if !p.Final() {
					all = false
					break
				}
				if !holds(e.When, p) {
					hold = false
				}
			}
			switch {
			case !all:
			case hold:
				start = append(start, n.Name)
				cur[n.Name] = Running
			default:
				skip = append(skip, n.Name)
				cur[n.Name] = Skipped
				changed = true
			}
		}
	}
	for _, n := range g.Nodes {
		if !cur[n.Name].Final() {
			return start, skip, nil, RunRunning
		}
	}
	return start, skip, nil, RunSucceeded
}
