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
