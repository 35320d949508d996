package workflow

import (
	"encoding/json"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
)

// Sub-workflows: a node of kind workflow runs another workflow, named by reference, to
// completion as one node. Whether the name exists and whether the reference makes a cycle
// through the stored workflows is checked where the store is (engine.CheckSubWorkflows); the
// rules that need no store are here.

// MaxWorkflowName is the longest workflow name (the server's limit on names).
const MaxWorkflowName = 200

// validateSub checks a sub-workflow node's own fields.
func (n Node) validateSub(field string) error {
	switch {
	case n.Workflow == "" || len(n.Workflow) > MaxWorkflowName:
		return schedule.Fieldf(field+".workflow", "a workflow node needs the name of its workflow (1 to %d characters)", MaxWorkflowName)
	case n.JobID != 0:
		return schedule.Fieldf(field+".job_id", "a workflow node runs no job")
	case n.Expr != "":
		return schedule.Fieldf(field+".expr", "only a decision node has an expression")
	}
	return nil
}

// SubWorkflows returns, for each sub-workflow node in order, its index and the workflow it
// names.
func (g *Graph) SubWorkflows() (idx []int, names []string) {
	for i, n := range g.Nodes {
		if n.Kind == KindWorkflow {
			idx, names = append(idx, i), append(names, n.Workflow)
		}
	}
	return idx, names
}

// Sinks returns the names of the nodes no edge leaves, in node order.
func (g *Graph) Sinks() []string {
	from := make(map[string]bool, len(g.Edges))
	for _, e := range g.Edges {
		from[e.From] = true
	}
	var out []string
	for _, n := range g.Nodes {
		if !from[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out
}

// SubWorkflowResult is the result a succeeded sub-workflow run gives its node: a JSON object
// with, by name, the result of each of its sink nodes (nodes no edge leaves), null for a
// sink that returned none (or was skipped).
func (g *Graph) SubWorkflowResult(results map[string]string) (string, error) {
	out := make(map[string]json.RawMessage)
	for _, name := range g.Sinks() {
		r := results[name]
		if r == "" {
			r = "null"
		}
		out[name] = json.RawMessage(r)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// SubWorkflowParams are the params of a sub-workflow's run: its workflow's default params,
// overlaid by the parent run's params, with the parent node's parents' results (by name)
// under the key "parents" (a param of that name is shadowed).
func SubWorkflowParams(defaults, parent map[string]any, parents map[string]json.RawMessage) (string, error) {
	out := make(map[string]any, len(defaults)+len(parent)+1)
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range parent {
		out[k] = v
	}
	ps := make(map[string]json.RawMessage, len(parents))
	for k, v := range parents {
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		ps[k] = v
	}
	out["parents"] = ps
	b, err := json.Marshal(out)
	return string(b), err
}

// RecursionError is a sub-workflow reference that leads back to a workflow on its path.
type RecursionError struct {
	Path []string
}

func (e *RecursionError) Error() string {
	return "recursion: " + strings.Join(e.Path, " -> ")
}
