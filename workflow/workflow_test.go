package workflow

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/schedule"
)

func graph(nodes []Node, edges ...Edge) *Graph {
	g := &Graph{Nodes: nodes, Edges: edges}
	g.Normalize()
	return g
}

func ptr(n int) *int { return &n }

func jobs(names ...string) []Node {
	var out []Node
	for i, n := range names {
		out = append(out, Node{Name: n, JobID: int64(i + 1)})
	}
	return out
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		g     *Graph
		field string
		msg   string
	}{
		{"empty", graph(nil), "nodes", "at least one"},
		{"bad name", graph([]Node{{Name: "a b", JobID: 1}}), "nodes[0].name", "not a node name"},
		{"twice", graph(jobs("a", "a")), "nodes[1].name", "named twice"},
		{"no job", graph([]Node{{Name: "a"}}), "nodes[0].job_id", "needs the id"},
		{"kind", graph([]Node{{Name: "a", Kind: "loop", JobID: 1}}), "nodes[0].kind", "not one of"},
		{"on failure", graph([]Node{{Name: "a", JobID: 1, OnFailure: "retry"}}), "nodes[0].on_failure", "not one of"},
		{"bad expr", graph([]Node{{Name: "d", Kind: KindDecision, Expr: "params.x +"}}), "nodes[0].expr", "expression"},
		{"expr not bool", graph([]Node{{Name: "d", Kind: KindDecision, Expr: "1 + 2"}}), "nodes[0].expr", "bool"},
		{"host function", graph([]Node{{Name: "d", Kind: KindDecision, Expr: `now() > 0`}}), "nodes[0].expr", "now"},
		{"long expr", graph([]Node{{Name: "d", Kind: KindDecision, Expr: strings.Repeat("true && ", 200) + "true"}}), "nodes[0].expr", "allowed"},
		{"node timeout", graph([]Node{{Name: "a", JobID: 1, TimeoutMs: -1}}), "nodes[0].timeout_ms", "not a timeout"},
		{"retries", graph([]Node{{Name: "a", JobID: 1, Retries: ptr(-1)}}), "nodes[0].retries", "not a number of retries"},
		{"too many retries", graph([]Node{{Name: "a", JobID: 1, Retries: ptr(MaxRetries + 1)}}), "nodes[0].retries", "from 0 to 100"},
		{"backoff", graph([]Node{{Name: "a", JobID: 1, RetryBackoffMs: -5}}), "nodes[0].retry_backoff_ms", "not a delay"},
		{"decision retried", graph([]Node{{Name: "d", Kind: KindDecision, Expr: "true", Retries: ptr(1)}}), "nodes[0].retries", "only a job node"},
		{"decision timeout", graph([]Node{{Name: "d", Kind: KindDecision, Expr: "true", TimeoutMs: 5}}), "nodes[0].timeout_ms", "only a job node"},
		{"run timeout", &Graph{Nodes: jobs("a"), TimeoutMs: -1}, "timeout_ms", "not a timeout"},
		{"unknown from", graph(jobs("a"), Edge{From: "x", To: "a"}), "edges[0].from", `"x"`},
		{"unknown to", graph(jobs("a"), Edge{From: "a", To: "y"}), "edges[0].to", `"y"`},
		{"self", graph(jobs("a"), Edge{From: "a", To: "a"}), "edges[0].to", "cycle: a -> a"},
		{"cycle", graph(jobs("a", "b", "c", "d"), Edge{From: "a", To: "b"}, Edge{From: "b", To: "c"}, Edge{From: "c", To: "d"}, Edge{From: "d", To: "b"}),
			"edges", "cycle: b -> c -> d -> b"},
		{"twice edge", graph(jobs("a", "b"), Edge{From: "a", To: "b"}, Edge{From: "a", To: "b", When: Always}), "edges[1]", "twice"},
		{"true from job", graph(jobs("a", "b"), Edge{From: "a", To: "b", When: IfTrue}), "edges[0].when", "decision"},
		{"success from decision", graph([]Node{{Name: "d", Kind: KindDecision, Expr: "true"}, {Name: "b", JobID: 1}}, Edge{From: "d", To: "b"}),
			"edges[0].when", "true, false or always"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.Validate()
			var fe *schedule.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a field error", err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Error(), c.msg) {
				t.Fatalf("Validate = %q on %q, want %q on %q", fe.Error(), fe.Field, c.msg, c.field)
			}
		})
	}
	ok := graph([]Node{{Name: "a", JobID: 1}, {Name: "d", Kind: KindDecision, Expr: `parents.a.n > params.min`}, {Name: "b", JobID: 2}},
		Edge{From: "a", To: "d"}, Edge{From: "d", To: "b", When: IfTrue})
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid graph: %v", err)
	}
}

// diamond: a -> b, a -> c, b -> d, c -> d.
func diamond(edges ...Edge) *Graph {
	if edges == nil {
		edges = []Edge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}}
	}
	return graph(jobs("a", "b", "c", "d"), edges...)
}

func TestStep(t *testing.T) {
	dec := graph([]Node{{Name: "a", JobID: 1}, {Name: "d", Kind: KindDecision, Expr: "true"}, {Name: "yes", JobID: 2}, {Name: "no", JobID: 3},
		{Name: "after_no", JobID: 4}, {Name: "cleanup", JobID: 5}},
		Edge{From: "a", To: "d"}, Edge{From: "d", To: "yes", When: IfTrue}, Edge{From: "d", To: "no", When: IfFalse},
		Edge{From: "no", To: "after_no"}, Edge{From: "after_no", To: "cleanup", When: Always})
	cases := []struct {
		name               string
		g                  *Graph
		states             map[string]State
		failed             bool
		start, skip, cance []string
		run                RunState
	}{
		{"roots start", diamond(), nil, false, []string{"a"}, nil, nil, RunRunning},
		{"fan out", diamond(), map[string]State{"a": Succeeded}, false, []string{"b", "c"}, nil, nil, RunRunning},
		{"join waits for every parent", diamond(), map[string]State{"a": Succeeded, "b": Succeeded, "c": Running}, false, nil, nil, nil, RunRunning},
		{"join", diamond(), map[string]State{"a": Succeeded, "b": Succeeded, "c": Succeeded}, false, []string{"d"}, nil, nil, RunRunning},
		{"done", diamond(), map[string]State{"a": Succeeded, "b": Succeeded, "c": Succeeded, "d": Succeeded}, false, nil, nil, nil, RunSucceeded},
		{"skip propagates", diamond(), map[string]State{"a": Failed}, false, nil, []string{"b", "c", "d"}, nil, RunSucceeded},
		{"skip propagates whatever the order of the nodes", graph(jobs("d", "c", "b", "a"), Edge{From: "a", To: "b"}, Edge{From: "b", To: "c"}, Edge{From: "c", To: "d"}),
			map[string]State{"a": Failed}, false, nil, []string{"b", "c", "d"}, nil, RunSucceeded},
		{"one parent skipped skips the join", diamond(), map[string]State{"a": Succeeded, "b": Skipped, "c": Succeeded}, false, nil, []string{"d"}, nil, RunSucceeded},
		{"on failure edge", diamond(Edge{From: "a", To: "b", When: OnFailure}, Edge{From: "a", To: "c"}, Edge{From: "c", To: "d", When: Always}),
			map[string]State{"a": Failed}, false, []string{"b", "d"}, []string{"c"}, nil, RunRunning},
		{"always after skipped", diamond(Edge{From: "a", To: "b"}, Edge{From: "b", To: "c", When: Always}),
			map[string]State{"a": Failed}, false, []string{"c", "d"}, []string{"b"}, nil, RunRunning},
		{"decision true", dec, map[string]State{"a": Succeeded, "d": True}, false, []string{"yes", "cleanup"}, []string{"no", "after_no"}, nil, RunRunning},
		{"decision false", dec, map[string]State{"a": Succeeded, "d": False}, false, []string{"no"}, []string{"yes"}, nil, RunRunning},
		{"always runs after a skipped branch", dec, map[string]State{"a": Succeeded, "d": False, "no": Succeeded, "after_no": Failed}, false,
			[]string{"cleanup"}, []string{"yes"}, nil, RunRunning},
		{"failed waits for running", diamond(), map[string]State{"a": Succeeded, "b": Failed, "c": Running}, true, nil, nil, []string{"d"}, RunRunning},
		{"failed ends", diamond(), map[string]State{"a": Succeeded, "b": Failed, "c": Succeeded}, true, nil, nil, []string{"d"}, RunFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start, skip, cancel, run := c.g.Step(c.states, c.failed)
			if !slices.Equal(start, c.start) || !slices.Equal(skip, c.skip) || !slices.Equal(cancel, c.cance) || run != c.run {
				t.Fatalf("Step = start %v skip %v cancel %v %s, want %v %v %v %s", start, skip, cancel, run, c.start, c.skip, c.cance, c.run)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		on    OnFail
		ok    bool
		state State
		fails bool
	}{
		{FailWorkflow, true, Succeeded, false}, {FailWorkflow, false, Failed, true},
		{Continue, false, Failed, false}, {Skip, false, Skipped, false},
	} {
		s, f := Node{OnFailure: c.on}.Outcome(c.ok)
		if s != c.state || f != c.fails {
			t.Errorf("%s ok=%v: %s %v, want %s %v", c.on, c.ok, s, f, c.state, c.fails)
		}
	}
}

func TestDecide(t *testing.T) {
	params := map[string]any{"min": 3.0, "env": "prod"}
	parents := map[string]any{"count": map[string]any{"n": 5.0}}
	for _, c := range []struct {
		src  string
		want bool
		err  string
	}{
		{`parents.count.n > params.min`, true, ""},
		{`params.env == "dev" || len(keys(parents)) == 0`, false, ""},
		{`parents.missing.n > 1`, false, "decision"},
		{`len(1..100000) > 0`, false, "memory budget"},
	} {
		got, err := Decide(c.src, params, parents)
		if c.err != "" {
			if err == nil || !errors.Is(err, ErrDecision) && !strings.Contains(err.Error(), c.err) {
				t.Errorf("Decide(%s) = %v, %v; want an error with %q", c.src, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Decide(%s) = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}
