// Package workflow is the pure part of workflows: a named DAG of nodes (references to jobs, or
// decision nodes), its validation, the rule that says which nodes run next, and the sandboxed
// decision expressions. It does no I/O: the engine stores a run's progress and calls Step on
// it inside the transaction that records a node's end.
package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
)

// Kind is what a node is.
type Kind string

// The node kinds.
const (
	// KindJob runs a job, by reference: editing the job changes what the node runs.
	KindJob Kind = "job"
	// KindDecision evaluates an expression over the run's params and its parents' results; its
	// outgoing edges with condition true or false are taken by the outcome.
	KindDecision Kind = "decision"
	// KindWorkflow runs another workflow, by reference (Node.Workflow names it), to
	// completion as one node: a sub-workflow. See SubWorkflowResult for what it returns.
	KindWorkflow Kind = "workflow"
)

// Condition is when an edge is taken, by the state of its parent.
type Condition string

// The edge conditions.
const (
	OnSuccess Condition = "on_success" // the default
	OnFailure Condition = "on_failure"
	Always    Condition = "always" // the parent finished, whatever its outcome
	// IfTrue and IfFalse leave decision nodes only.
	IfTrue  Condition = "true"
	IfFalse Condition = "false"
)

// OnFail is what a failed job node does to its run.
type OnFail string

// The failure handlings.
const (
	// FailWorkflow (the default) fails the run: no further node starts.
	FailWorkflow OnFail = "fail"
	// Continue records the node failed and goes on: its on_failure and always edges are
	// taken, the others skipped, and the run can still succeed.
	Continue OnFail = "continue"
	// Skip records the node skipped, as if it had not run: its children skip unless an
	// always edge leads to them.
	Skip OnFail = "skip"
)

// Node is one step of a workflow.
type Node struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind,omitempty"` // job when empty
	// JobID references the job a job node runs.
	JobID int64 `json:"job_id,omitempty"`
	// Expr is a decision node's expression; it must yield a bool.
	Expr string `json:"expr,omitempty"`
	// Workflow names the workflow a sub-workflow node runs (read when the node starts).
	Workflow  string `json:"workflow,omitempty"`
	OnFailure OnFail `json:"on_failure,omitempty"`
	// TimeoutMs bounds each attempt of a job node's run in place of its job's timeout (0
	// keeps the job's): the same job can be quick in one workflow and slow in another.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
	// Retries, when given, is how many times a failed or timed-out run of the node is
	// retried in place of its job's max_retries; RetryBackoffMs (0 keeps the job's) is the
	// first retry's delay, doubled for each further one.
	Retries        *int  `json:"retries,omitempty"`
	RetryBackoffMs int64 `json:"retry_backoff_ms,omitempty"`
}

// Edge leads from a parent node to a child.
type Edge struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	When Condition `json:"when,omitempty"` // on_success when empty
}

// Graph is a workflow's nodes and edges (stored as one JSON document with the workflow).
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges,omitempty"`
	// TimeoutMs bounds a whole run (0 for none): when it elapses the run fails, its nodes
	// that have not started never do, and those running are killed.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// Limits of a workflow's size.
const (
	MaxNodes      = 500
	MaxNameLength = 100
	// MaxRetries bounds a node's retries, and MaxTimeoutMs a node's or a run's timeout (30 days).
	MaxRetries   = 100
	MaxTimeoutMs = 30 * 24 * 3600 * 1000
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Normalize fills the defaults (kind job, on_failure fail, edge on_success) in place.
func (g *Graph) Normalize() {
	for i := range g.Nodes {
		if g.Nodes[i].Kind == "" {
			g.Nodes[i].Kind = KindJob
		}
		if g.Nodes[i].OnFailure == "" {
			g.Nodes[i].OnFailure = FailWorkflow
		}
	}
	for i := range g.Edges {
		if g.Edges[i].When == "" {
			g.Edges[i].When = OnSuccess
		}
	}
}

// Validate checks a normalized graph and returns a *schedule.FieldError naming the offending
// field (nodes[i].name, edges[i].to, ...): a cycle is refused with the cycle named.
func (g *Graph) Validate() error {
	if len(g.Nodes) == 0 {
		return schedule.Fieldf("nodes", "a workflow needs at least one node")
	}
	if len(g.Nodes) > MaxNodes {
		return schedule.Fieldf("nodes", "%d nodes is more than the %d allowed", len(g.Nodes), MaxNodes)
	}
	if g.TimeoutMs < 0 || g.TimeoutMs > MaxTimeoutMs {
		return schedule.Fieldf("timeout_ms", "%d is not a timeout from 0 (none) to %d ms", g.TimeoutMs, MaxTimeoutMs)
	}
	index := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		switch {
		case !nameRE.MatchString(n.Name) || len(n.Name) > MaxNameLength:
			return schedule.Fieldf(field+".name", "%q is not a node name (letters, digits, _ . -; at most %d)", n.Name, MaxNameLength)
		case index[n.Name] != 0:
			return schedule.Fieldf(field+".name", "node %q is named twice", n.Name)
		}
		index[n.Name] = i + 1
		switch n.OnFailure {
		case FailWorkflow, Continue, Skip:
		default:
			return schedule.Fieldf(field+".on_failure", "%q is not one of fail, continue, skip", n.OnFailure)
		}
		if err := n.validateRun(field); err != nil {
			return err
		}
		switch n.Kind {
		case KindJob:
			if n.JobID <= 0 {
				return schedule.Fieldf(field+".job_id", "a job node needs the id of its job")
			}
			if n.Expr != "" {
				return schedule.Fieldf(field+".expr", "only a decision node has an expression")
			}
			if n.Workflow != "" {
				return schedule.Fieldf(field+".workflow", "only a workflow node runs a workflow")
			}
		case KindWorkflow:
			if err := n.validateSub(field); err != nil {
				return err
			}
		case KindDecision:
			if n.JobID != 0 {
				return schedule.Fieldf(field+".job_id", "a decision node runs no job")
			}
			if n.Workflow != "" {
				return schedule.Fieldf(field+".workflow", "only a workflow node runs a workflow")
			}
			if _, err := CompileDecision(n.Expr); err != nil {
				return &schedule.FieldError{Field: field + ".expr", Err: err}
			}
		default:
			return schedule.Fieldf(field+".kind", "%q is not one of job, decision, workflow", n.Kind)
		}
	}
	seen := make(map[[2]string]bool, len(g.Edges))
	for i, e := range g.Edges {
		field := fmt.Sprintf("edges[%d]", i)
		from, ok := index[e.From]
		if !ok {
			return schedule.Fieldf(field+".from", "no node is named %q", e.From)
		}
		if _, ok := index[e.To]; !ok {
			return schedule.Fieldf(field+".to", "no node is named %q", e.To)
		}
		if e.From == e.To {
			return schedule.Fieldf(field+".to", "cycle: %s -> %s", e.From, e.To)
		}
		if seen[[2]string{e.From, e.To}] {
			return schedule.Fieldf(field, "edge %s -> %s is given twice", e.From, e.To)
		}
		seen[[2]string{e.From, e.To}] = true
		decision := g.Nodes[from-1].Kind == KindDecision
		switch e.When {
		case OnSuccess, OnFailure, Always:
			if decision && e.When != Always {
				return schedule.Fieldf(field+".when", "an edge from decision node %q is taken when true, false or always", e.From)
			}
		case IfTrue, IfFalse:
			if !decision {
				return schedule.Fieldf(field+".when", "only an edge from a decision node is taken when %s", e.When)
			}
		default:
			return schedule.Fieldf(field+".when", "%q is not one of on_success, on_failure, always, true, false", e.When)
		}
	}
	if cycle := g.cycle(); cycle != nil {
		return schedule.Fieldf("edges", "cycle: %s", strings.Join(cycle, " -> "))
	}
	return nil
}

// validateRun checks a node's timeout and retries: in range, and on job nodes only (a
// decision runs no job to time out or retry).
func (n Node) validateRun(field string) error {
	switch {
	case n.TimeoutMs < 0 || n.TimeoutMs > MaxTimeoutMs:
		return schedule.Fieldf(field+".timeout_ms", "%d is not a timeout from 0 (the job's) to %d ms", n.TimeoutMs, MaxTimeoutMs)
	case n.Retries != nil && (*n.Retries < 0 || *n.Retries > MaxRetries):
		return schedule.Fieldf(field+".retries", "%d is not a number of retries from 0 to %d", *n.Retries, MaxRetries)
	case n.RetryBackoffMs < 0 || n.RetryBackoffMs > MaxTimeoutMs:
		return schedule.Fieldf(field+".retry_backoff_ms", "%d is not a delay from 0 (the job's) to %d ms", n.RetryBackoffMs, MaxTimeoutMs)
	case n.Kind == KindJob:
		return nil
	case n.TimeoutMs != 0:
		return schedule.Fieldf(field+".timeout_ms", "only a job node has a timeout")
	case n.Retries != nil || n.RetryBackoffMs != 0:
		return schedule.Fieldf(field+".retries", "only a job node is retried")
	}
	return nil
}

// cycle returns one cycle of the graph as the names along it, first repeated last, or nil.
func (g *Graph) cycle() []string {
	children := g.children()
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(g.Nodes))
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, e := range children[n] {
			switch state[e.To] {
			case onPath:
				for i, p := range path {
					if p == e.To {
						return append(append([]string(nil), path[i:]...), e.To)
					}
				}
			case unseen:
				if c := visit(e.To); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, n := range g.Nodes {
		if state[n.Name] == unseen {
			if c := visit(n.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

func (g *Graph) children() map[string][]Edge {
	out := make(map[string][]Edge, len(g.Nodes))
	for _, e := range g.Edges {
		out[e.From] = append(out[e.From], e)
	}
	return out
}

func (g *Graph) parents() map[string][]Edge {
	out := make(map[string][]Edge, len(g.Nodes))
	for _, e := range g.Edges {
		out[e.To] = append(out[e.To], e)
	}
	return out
}

// Node returns the node named name.
func (g *Graph) Node(name string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// Parents returns the names of the node's parents, in edge order.
func (g *Graph) Parents(name string) []string {
	var out []string
	for _, e := range g.Edges {
		if e.To == name {
			out = append(out, e.From)
		}
	}
	return out
}

// ErrDecision is the failure of a decision expression at run time.
var ErrDecision = errors.New("decision")
