package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLIWorkflow creates a workflow from a file, refuses a cycle with exit 2 and one line
// naming it, runs the workflow with params, follows the run to its end with status, lists
// its runs, and cancels a run that ended (nothing changes).
func TestCLIWorkflow(t *testing.T) {
	s := startAPIServer(t)
	a := mustJSON[api.Job](t, s, "job", "create", "extract", "--handler", "noop")
	b := mustJSON[api.Job](t, s, "job", "create", "load", "--handler", "noop")
	graph := fmt.Sprintf(`{"nodes":[{"name":"extract","job_id":%d},{"name":"ok","kind":"decision","expr":"params.go == true"},{"name":"load","job_id":%d}],
	"edges":[{"from":"extract","to":"ok"},{"from":"ok","to":"load","when":"true"}]}`, a.ID, b.ID)
	file := filepath.Join(t.TempDir(), "etl.json")
	if err := os.WriteFile(file, []byte(graph), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := s.cli(t, "workflow", "create", "loop", "--graph",
		fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d},{"name":"y","job_id":%d}],"edges":[{"from":"x","to":"y"},{"from":"y","to":"x"}]}`, a.ID, b.ID))
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "edges") || !strings.Contains(errOut, "cycle: x -> y -> x") {
		t.Errorf("a cycle: exit %d, %q; want 2 and one line naming the cycle", code, errOut)
	}
	w := mustJSON[api.Workflow](t, s, "workflow", "create", "etl", "--graph", "@"+file, "--params", `{"go":false}`)
	if out := s.mustCLI(t, "workflow", "list"); !strings.Contains(out, "etl") {
		t.Errorf("workflow list:\n%s", out)
	}
	if got := mustJSON[api.Workflow](t, s, "workflow", "get", "etl"); got.ID != w.ID {
		t.Errorf("workflow get: %+v", got)
	}
	run := mustJSON[api.WorkflowRun](t, s, "workflow", "run", "etl", "--params", `{"go":true}`)
	id := strconv.FormatInt(run.ID, 10)
	eventually(t, "the run to end", func() bool {
		run = mustJSON[api.WorkflowRun](t, s, "workflow", "status", id)
		return run.State != "running"
	})
	if run.State != "succeeded" || len(run.Nodes) != 3 {
		t.Fatalf("run %+v: want succeeded with 3 nodes", run)
	}
	out := s.mustCLI(t, "workflow", "status", id)
	for _, want := range []string{"extract", "succeeded", "ok", "true", "load"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not show %q:\n%s", want, out)
		}
	}
	if out := s.mustCLI(t, "workflow", "runs", "etl"); !strings.Contains(out, id) || !strings.Contains(out, "succeeded") {
		t.Errorf("workflow runs:\n%s", out)
	}
	if got := mustJSON[api.WorkflowRun](t, s, "workflow", "cancel", id); got.State != "succeeded" {
		t.Errorf("canceling an ended run made it %s", got.State)
	}
	// A workflow's trigger job: its fires (here a run now) start runs of the workflow.
	s.mustCLI(t, "job", "create", "etl-nightly", "--handler", "sundial.workflow", "--params", "etl", "--cron", "0 0 2 * * ?")
	s.mustCLI(t, "job", "run", "etl-nightly")
	eventually(t, "the triggered run to end", func() bool {
		runs := mustJSON[api.Page[api.WorkflowRun]](t, s, "workflow", "runs", "etl")
		return len(runs.Items) == 2 && runs.Items[0].State == "succeeded" && runs.Items[0].Cause == "manual"
	})
	if code, _, errOut := s.cli(t, "workflow", "run", "etl", "--params", "{nope"); code != 2 || !strings.Contains(errOut, "--params") {
		t.Errorf("bad params: exit %d, %q", code, errOut)
	}
}

// TestCLIWorkflowRunOps repairs a failed run from the CLI (workflow run retry, retry-node,
// mark-succeeded with a result, cancel), updates a workflow (a stale --version is exit 1 with
// one line) and deletes it.
func TestCLIWorkflowRunOps(t *testing.T) {
	s := startAPIServer(t)
	bad := mustJSON[api.Job](t, s, "job", "create", "broken", "--handler", "no-such-handler")
	next := mustJSON[api.Job](t, s, "job", "create", "after", "--handler", "noop")
	graph := fmt.Sprintf(`{"nodes":[{"name":"bad","job_id":%d},{"name":"next","job_id":%d}],"edges":[{"from":"bad","to":"next"}]}`, bad.ID, next.ID)
	mustJSON[api.Workflow](t, s, "workflow", "create", "fix", "--graph", graph)
	ended := func(id string) api.WorkflowRun {
		var run api.WorkflowRun
		eventually(t, "the run to end", func() bool {
			run = mustJSON[api.WorkflowRun](t, s, "workflow", "status", id)
			return run.State != "running"
		})
		return run
	}
	run := mustJSON[api.WorkflowRun](t, s, "workflow", "run", "fix")
	id := strconv.FormatInt(run.ID, 10)
	if run = ended(id); run.State != "failed" {
		t.Fatalf("run %+v: want failed", run)
	}
	mustJSON[api.WorkflowRun](t, s, "workflow", "run", "retry-node", id, "bad")
	if run = ended(id); run.State != "failed" || run.Nodes[0].Message == "" {
		t.Fatalf("after retry-node %+v: want failed again", run)
	}
	mustJSON[api.WorkflowRun](t, s, "workflow", "run", "retry", id)
	if run = ended(id); run.State != "failed" {
		t.Fatalf("after retry %+v: want failed again", run)
	}
	mustJSON[api.WorkflowRun](t, s, "workflow", "run", "mark-succeeded", id, "bad", "--result", `{"rows":0}`)
	if run = ended(id); run.State != "succeeded" || string(run.Nodes[0].Result) != `{"rows":0}` {
		t.Fatalf("after mark-succeeded %+v: want succeeded with the result", run)
	}
	if code, _, errOut := s.cli(t, "workflow", "run", "retry", id); code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no failed node") {
		t.Errorf("retry of a succeeded run: exit %d, %q", code, errOut)
	}
	if code, _, errOut := s.cli(t, "workflow", "run", "mark-succeeded", id, "bad", "--result", "{nope"); code != 2 || !strings.Contains(errOut, "--result") {
		t.Errorf("bad result: exit %d, %q", code, errOut)
	}
	if got := mustJSON[api.WorkflowRun](t, s, "workflow", "run", "cancel", id); got.State != "succeeded" {
		t.Errorf("canceling an ended run made it %s", got.State)
	}

	w := mustJSON[api.Workflow](t, s, "workflow", "update", "fix", "--graph", graph, "--description", "fixed", "--version", "1")
	if w.Version != 2 || w.Description != "fixed" {
		t.Errorf("updated %+v", w)
	}
	if code, _, errOut := s.cli(t, "workflow", "update", "fix", "--graph", graph, "--version", "1"); code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "version") {
		t.Errorf("stale update: exit %d, %q", code, errOut)
	}
	s.mustCLI(t, "workflow", "delete", "fix")
	if code, _, _ := s.cli(t, "workflow", "get", "fix"); code == 0 {
		t.Error("the deleted workflow is still there")
	}
}

// TestCLIWorkflowBackfill backfills a workflow through its trigger job: a dry run plans one
// run per nightly time and stores nothing; the backfill makes workflow runs marked backfill
// with their data intervals (shown by workflow status); a workflow without a trigger is
// refused with exit 2 and one line naming the trigger field. On every database.
func TestCLIWorkflowBackfill(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		load := mustJSON[api.Job](t, s, "job", "create", "load", "--handler", "noop")
		s.mustCLI(t, "workflow", "create", "nightly", "--graph", fmt.Sprintf(`{"nodes":[{"name":"load","job_id":%d}]}`, load.ID))
		rng := []string{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z"}
		code, _, errOut := s.cli(t, append([]string{"workflow", "backfill", "nightly"}, rng...)...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "trigger") {
			t.Errorf("no trigger: exit %d, %q; want 2 and one line naming the trigger", code, errOut)
		}
		s.mustCLI(t, "job", "create", "nightly-trigger", "--handler", "sundial.workflow", "--params", "nightly", "--cron", "0 0 2 * * ?")
		plan := mustJSON[api.Backfill](t, s, append([]string{"workflow", "backfill", "nightly", "--dry-run"}, rng...)...)
		if plan.ID != 0 || plan.Total != 2 || plan.Workflow != "nightly" {
			t.Fatalf("dry run: %+v", plan)
		}
		if out := s.mustCLI(t, append([]string{"workflow", "backfill", "nightly", "--dry-run"}, rng...)...); !strings.Contains(out, "nothing stored") {
			t.Errorf("dry run:\n%s", out)
		}
		out := s.mustCLI(t, append([]string{"workflow", "backfill", "nightly", "--max-concurrent", "2"}, rng...)...)
		var id int64
		if _, err := fmt.Sscanf(out, "Started backfill %d of workflow nightly", &id); err != nil {
			t.Fatalf("backfill said %q", out)
		}
		eventually(t, "the backfill to finish", func() bool {
			return mustJSON[api.Backfill](t, s, "backfill", "get", strconv.FormatInt(id, 10)).State == "done"
		})
		runs := mustJSON[api.Page[api.WorkflowRun]](t, s, "workflow", "runs", "nightly")
		var got []string
		for _, r := range runs.Items {
			if r.Cause != "backfill" || r.BackfillID != id || r.State != "succeeded" {
				t.Errorf("run %+v: want a succeeded run of backfill %d", r, id)
			}
			got = append(got, rfc(r.IntervalStart)+" "+rfc(r.IntervalEnd))
		}
		slices.Sort(got)
		want := []string{"2026-02-28T02:00:00Z 2026-03-01T02:00:00Z", "2026-03-01T02:00:00Z 2026-03-02T02:00:00Z"}
		if !slices.Equal(got, want) {
			t.Errorf("the runs' intervals %q, want %q", got, want)
		}
		if out := s.mustCLI(t, "workflow", "status", strconv.FormatInt(runs.Items[0].ID, 10)); !strings.Contains(out, "Interval:") ||
			!strings.Contains(out, "Backfill:") || !strings.Contains(out, "backfill") {
			t.Errorf("workflow status does not show the interval and backfill:\n%s", out)
		}
	})
}

// TestCLIWorkflowOverlap sets a workflow's overlap policy with --concurrency and
// --max-concurrent: a bad one is exit 2 with one line naming the flag's field, an update
// without the flags keeps the policy, and get shows it.
func TestCLIWorkflowOverlap(t *testing.T) {
	s := startAPIServer(t)
	a := mustJSON[api.Job](t, s, "job", "create", "extract", "--handler", "noop")
	graph := fmt.Sprintf(`{"nodes":[{"name":"extract","job_id":%d}]}`, a.ID)
	code, _, errOut := s.cli(t, "workflow", "create", "etl", "--graph", graph, "--concurrency", "at_most")
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "max_concurrent") {
		t.Errorf("at_most without a limit: exit %d, %q; want 2 and one line naming max_concurrent", code, errOut)
	}
	w := mustJSON[api.Workflow](t, s, "workflow", "create", "etl", "--graph", graph, "--concurrency", "at_most", "--max-concurrent", "2")
	if w.Concurrency != "at_most" || w.MaxConcurrent != 2 {
		t.Fatalf("created %+v, want at_most 2", w.WorkflowOverlap)
	}
	if w = mustJSON[api.Workflow](t, s, "workflow", "update", "etl", "--graph", graph, "--description", "kept"); w.Concurrency != "at_most" || w.MaxConcurrent != 2 {
		t.Errorf("an update without --concurrency made it %+v", w.WorkflowOverlap)
	}
	if w = mustJSON[api.Workflow](t, s, "workflow", "update", "etl", "--graph", graph, "--concurrency", "discard"); w.Concurrency != "skip" {
		t.Errorf("--concurrency discard stored %q, want skip", w.Concurrency)
	}
	if out := s.mustCLI(t, "workflow", "get", "etl"); !strings.Contains(out, "skip") {
		t.Errorf("workflow get does not show the policy:\n%s", out)
	}
}

// TestCLISubWorkflow runs a workflow with a sub-workflow node from the CLI: workflow status
// shows the node's child run, and the child run's status its parent; a reference back is
// refused with exit 2 and one line naming the field and the path.
func TestCLISubWorkflow(t *testing.T) {
	s := startAPIServer(t)
	x := mustJSON[api.Job](t, s, "job", "create", "inner-x", "--handler", "noop")
	a := mustJSON[api.Job](t, s, "job", "create", "outer-a", "--handler", "noop")
	mustJSON[api.Workflow](t, s, "workflow", "create", "inner", "--graph", fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d}]}`, x.ID))
	mustJSON[api.Workflow](t, s, "workflow", "create", "outer", "--graph",
		fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":"inner"}],"edges":[{"from":"a","to":"sub"}]}`, a.ID))
	code, _, errOut := s.cli(t, "workflow", "update", "inner", "--graph", `{"nodes":[{"name":"back","kind":"workflow","workflow":"outer"}]}`)
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "nodes[0].workflow") || !strings.Contains(errOut, "recursion: inner -> outer -> inner") {
		t.Errorf("recursion: exit %d, %q; want 2 and one line naming the field and the path", code, errOut)
	}
	run := mustJSON[api.WorkflowRun](t, s, "workflow", "run", "outer")
	id := strconv.FormatInt(run.ID, 10)
	eventually(t, "the run to end", func() bool {
		run = mustJSON[api.WorkflowRun](t, s, "workflow", "status", id)
		return run.State != "running"
	})
	if run.State != "succeeded" || len(run.Nodes) != 2 || run.Nodes[1].ChildRunID == 0 {
		t.Fatalf("run %+v: want succeeded, its sub node linked to its child run", run)
	}
	child := strconv.FormatInt(run.Nodes[1].ChildRunID, 10)
	if out := s.mustCLI(t, "workflow", "status", id); !strings.Contains(out, "run "+child) {
		t.Errorf("status does not show the sub node's child run %s:\n%s", child, out)
	}
	if out := s.mustCLI(t, "workflow", "status", child); !strings.Contains(out, fmt.Sprintf("run %s, node sub", id)) {
		t.Errorf("the child run's status does not show its parent run %s:\n%s", id, out)
	}
}
