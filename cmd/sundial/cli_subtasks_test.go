package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestCLIExecSubtasks: `sundial exec subtasks ID` prints a run's sub-task counts by state and
// its sub-tasks with their parent, in a table and as JSON (every page with --all); a bad state
// exits non-zero with one line naming the field.
func TestCLIExecSubtasks(t *testing.T) {
	s := startAPIServer(t)
	ctx := context.Background()
	job := mustJSON[api.Job](t, s, "job", "create", "mr", "--handler", "mr")
	x := mustJSON[api.Execution](t, s, "job", "run", strconv.FormatInt(job.ID, 10))
	ts := make([]*store.Subtask, 3)
	for i := range ts {
		ts[i] = &store.Subtask{Depth: 1, Seq: i, Payload: fmt.Sprintf(`{"part":%d}`, i)}
	}
	if _, err := s.st.SubtasksMap(ctx, &store.SubtaskMap{ExecutionID: x.ID, JobID: job.ID, Handler: "mr"}, ts, 0); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.st.SubtasksClaim(ctx, "n/1", []string{"mr"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.SubtasksMap(ctx, &store.SubtaskMap{ExecutionID: x.ID, JobID: job.ID, Handler: "mr"},
		[]*store.Subtask{{ParentID: claimed[0].ID, Depth: 2, Seq: 0, Payload: `"deeper"`}}, 0); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(x.ID, 10)
	out := s.mustCLI(t, "exec", "subtasks", id)
	if !strings.Contains(out, "sub-tasks of execution "+id+": pending 3, running 1") || !strings.Contains(out, `{"part":2}`) ||
		!strings.Contains(out, `"deeper"`) {
		t.Fatalf("exec subtasks:\n%s", out)
	}
	p := mustJSON[api.SubtaskPage](t, s, "exec", "subtasks", id, "--limit", "1", "--all")
	if len(p.Items) != 4 || p.Counts["pending"] != 3 || p.Items[3].ParentID != claimed[0].ID || p.Items[3].Depth != 2 {
		t.Fatalf("exec subtasks -o json --all: %+v", p)
	}
	if code, _, errOut := s.cli(t, "exec", "subtasks", id, "--state", "done"); code == 0 || !strings.Contains(errOut, "state") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("a bad state: exit %d, %q", code, errOut)
	}
}
