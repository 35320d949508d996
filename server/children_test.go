package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// Child jobs over the API: set on create and replaced on update; a missing job, the job
// itself or a repeat is refused with a 400 naming child_job_ids[i], storing nothing.
func TestChildJobsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newEnv(t, dialect).client()
		ctx := context.Background()
		a, err := c.CreateJob(ctx, api.JobRequest{Name: "a", Handler: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.CreateJob(ctx, api.JobRequest{Name: "b", Handler: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.ChildJobIDs) != 0 || a.ChildJobIDs == nil {
			t.Fatalf("a job without children shows %#v, want []", a.ChildJobIDs)
		}
		parent, err := c.CreateJob(ctx, api.JobRequest{Name: "parent", Handler: "noop", ChildJobIDs: []int64{a.ID, b.ID}})
		if err != nil || len(parent.ChildJobIDs) != 2 || parent.ChildJobIDs[0] != a.ID || parent.ChildJobIDs[1] != b.ID {
			t.Fatalf("create with children: %+v, %v", parent, err)
		}
		wantField := func(what string, err error, field string) {
			t.Helper()
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != field {
				t.Fatalf("%s: %#v, want a 400 naming %s", what, err, field)
			}
		}
		_, err = c.CreateJob(ctx, api.JobRequest{Name: "orphan", Handler: "noop", ChildJobIDs: []int64{a.ID, 99999}})
		wantField("missing child", err, "child_job_ids[1]")
		if _, err := c.CreateJob(ctx, api.JobRequest{Name: "orphan", Handler: "noop"}); err != nil {
			t.Fatalf("the refused create stored the job: %v", err)
		}
		req := parent.Request()
		req.ChildJobIDs = []int64{b.ID, parent.ID}
		_, err = c.UpdateJob(ctx, parent.ID, req)
		wantField("self", err, "child_job_ids[1]")
		req.ChildJobIDs = []int64{b.ID, b.ID}
		_, err = c.UpdateJob(ctx, parent.ID, req)
		wantField("repeat", err, "child_job_ids[1]")
		if got, _ := c.GetJob(ctx, parent.ID); len(got.ChildJobIDs) != 2 || got.ChildJobIDs[0] != a.ID {
			t.Fatalf("refused updates changed the children to %v", got.ChildJobIDs)
		}
		req.ChildJobIDs = []int64{b.ID}
		if got, err := c.UpdateJob(ctx, parent.ID, req); err != nil || len(got.ChildJobIDs) != 1 || got.ChildJobIDs[0] != b.ID {
			t.Fatalf("update children: %+v, %v", got, err)
		}
	})
}

// Child jobs name only jobs the caller may run: an operator of alpha cannot chain a job of
// beta (or of no app) to an alpha job on create or update, 403 naming child_job_ids[i];
// children an admin set stay when the operator edits the job otherwise.
func TestChildJobsScope(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"alpha"}})
		beta := must(admin.CreateJob(ctx, jobReq("beta-job", "beta", "http")))(t)
		local := must(admin.CreateJob(ctx, jobReq("local-job", "", "noop")))(t)
		sibling := must(op.CreateJob(ctx, jobReq("sibling", "alpha", "http")))(t)
		wantScope := func(what string, err error, field string) {
			t.Helper()
			if ae := wantStatus(t, what, err, http.StatusForbidden); ae.Field != field {
				t.Fatalf("%s: field %q, want %s", what, ae.Field, field)
			}
		}
		req := jobReq("alpha-job", "alpha", "http")
		req.ChildJobIDs = []int64{sibling.ID, beta.ID}
		_, err := op.CreateJob(ctx, req)
		wantScope("create with another app's child", err, "child_job_ids[1]")
		req.ChildJobIDs = []int64{local.ID}
		_, err = op.CreateJob(ctx, req)
		wantScope("create with a child of no app", err, "child_job_ids[0]")

		req.ChildJobIDs = []int64{sibling.ID}
		job := must(op.CreateJob(ctx, req))(t)
		req.ChildJobIDs = []int64{sibling.ID, beta.ID}
		_, err = op.UpdateJob(ctx, job.ID, req)
		wantScope("update adding another app's child", err, "child_job_ids[1]")
		if got := must(op.GetJob(ctx, job.ID))(t); len(got.ChildJobIDs) != 1 {
			t.Fatalf("the refused update stored children %v", got.ChildJobIDs)
		}

		// An admin may chain across apps; the operator keeps that chain when editing.
		must(admin.UpdateJob(ctx, job.ID, req))(t)
		req.TimeoutMs = 5000
		if got, err := op.UpdateJob(ctx, job.ID, req); err != nil || len(got.ChildJobIDs) != 2 {
			t.Fatalf("operator editing a job that keeps an admin's children: %+v, %v", got, err)
		}
	})
}
