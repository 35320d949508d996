package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestSubtasksRoute: GET /executions/{id}/subtasks gives the counts of a run's sub-tasks by
// state and pages of them (with a state filter) on every database; a bad state is a 400
// naming the field; an operator or a viewer scoped to another app gets 403, and one scoped
// to the run's app reads it.
func TestSubtasksRoute(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		job := must(admin.CreateJob(ctx, jobReq("mr", "mail", "mr")))(t)
		run := must(admin.RunJob(ctx, job.ID))(t)
		ts := make([]*store.Subtask, 5)
		for i := range ts {
			ts[i] = &store.Subtask{Depth: 1, Seq: i, Payload: fmt.Sprint(i)}
		}
		must(e.st.SubtasksMap(ctx, &store.SubtaskMap{ExecutionID: run.ID, JobID: job.ID, Handler: "mr"}, ts, 0))(t)
		claimed := must(e.st.SubtasksClaim(ctx, "n/1", []string{"mr"}, 2))(t)
		must(e.st.SubtasksComplete(ctx, []store.SubtaskResult{{ID: claimed[0].ID, Attempt: 1, Owner: "n/1", State: store.SubtaskSucceeded, Result: `{"ok":true}`}}))(t)

		p := must(admin.ListSubtasks(ctx, run.ID, "", api.ListOptions{Limit: 3}))(t)
		if len(p.Items) != 3 || p.Next == nil || p.Counts["pending"] != 3 || p.Counts["running"] != 1 || p.Counts["succeeded"] != 1 {
			t.Fatalf("first page: %+v", p)
		}
		if p.Items[0].ExecutionID != run.ID || string(p.Items[0].Result) != `{"ok":true}` || string(p.Items[0].Payload) != "0" {
			t.Fatalf("first sub-task: %+v", p.Items[0])
		}
		rest := must(admin.ListSubtasks(ctx, run.ID, "", api.ListOptions{After: *p.Next}))(t)
		if len(rest.Items) != 2 || rest.Next != nil {
			t.Fatalf("second page: %+v", rest)
		}
		pending := must(admin.ListSubtasks(ctx, run.ID, "pending", api.ListOptions{}))(t)
		if len(pending.Items) != 3 {
			t.Fatalf("pending: %+v", pending)
		}
		_, err := admin.ListSubtasks(ctx, run.ID, "done", api.ListOptions{})
		if ae := wantStatus(t, "a bad state", err, 400); ae.Field != "state" {
			t.Fatalf("a bad state names %q, want state", ae.Field)
		}
		_, err = admin.ListSubtasks(ctx, run.ID+1000, "", api.ListOptions{})
		wantStatus(t, "no such execution", err, 404)

		op, _ := e.userClient(api.UserRequest{Name: "olga", Role: api.RoleOperator, Scope: []string{"billing"}})
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer, Scope: []string{"billing"}})
		mailViewer, _ := e.userClient(api.UserRequest{Name: "mia", Role: api.RoleViewer, Scope: []string{"mail"}})
		_, err = op.ListSubtasks(ctx, run.ID, "", api.ListOptions{})
		wantStatus(t, "an operator of another app", err, 403)
		_, err = viewer.ListSubtasks(ctx, run.ID, "", api.ListOptions{})
		wantStatus(t, "a viewer of another app", err, 403)
		if got := must(mailViewer.ListSubtasks(ctx, run.ID, "", api.ListOptions{}))(t); len(got.Items) != 5 {
			t.Fatalf("the run's app's viewer: %+v", got)
		}
	})
}
