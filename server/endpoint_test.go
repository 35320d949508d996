package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestOpsDecideAccessInProcess: an operation called in process (as the console calls it)
// is refused without a principal, and to a principal without the role or the scope, as the
// API's route refuses it; the error maps to the API's status.
func TestOpsDecideAccessInProcess(t *testing.T) {
	e := newEnv(t, "sqlite")
	var billing, ops api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "invoice", "handler": "noop", "app": "billing"}, 201, &billing)
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "backup", "handler": "noop", "app": "ops"}, 201, &ops)
	o := e.srv.Ops()
	as := func(role store.Role, scope string) context.Context {
		p := newPrincipal(&store.User{ID: 99, Name: "someone", Role: role, Scope: scope}, nil)
		return withCaller(context.Background(), p, "in-process")
	}
	status := func(err error) int {
		if err == nil {
			return http.StatusOK
		}
		ae, _ := ErrorOf(err)
		return ae.Status
	}
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"no principal", errOf(o.GetJob.Execute(context.Background(), &JobRef{ID: billing.ID})), http.StatusUnauthorized},
		{"viewer of billing reads its job", errOf(o.GetJob.Execute(as(store.RoleViewer, "billing"), &JobRef{ID: billing.ID})), http.StatusOK},
		{"viewer of billing reads another app's", errOf(o.GetJob.Execute(as(store.RoleViewer, "billing"), &JobRef{ID: ops.ID})), http.StatusForbidden},
		{"viewer pauses", errOf(o.PauseJob.Execute(as(store.RoleViewer, "*"), &JobRef{ID: billing.ID})), http.StatusForbidden},
		{"operator of billing pauses another app's", errOf(o.PauseJob.Execute(as(store.RoleOperator, "billing"), &JobRef{ID: ops.ID})), http.StatusForbidden},
		{"operator of billing moves its job to ops", errOf(o.UpdateJob.Execute(as(store.RoleOperator, "billing"),
			&JobChange{ID: billing.ID, JobRequest: api.JobRequest{Name: "invoice", Handler: "noop", App: "ops"}})), http.StatusForbidden},
		{"operator of billing pauses its job", errOf(o.PauseJob.Execute(as(store.RoleOperator, "billing"), &JobRef{ID: billing.ID})), http.StatusOK},
		{"operator lists users", errOf(o.ListUsers.Execute(as(store.RoleOperator, "*"), &UserQuery{})), http.StatusForbidden},
		{"a NUL in a request", errOf(o.ListJobs.Execute(as(store.RoleAdmin, "*"), &JobQuery{Group: "a\x00b"})), http.StatusBadRequest},
	} {
		if got := status(c.err); got != c.want {
			t.Errorf("%s: %d (%v), want %d", c.name, got, c.err, c.want)
		}
	}
	// A scoped list holds only the caller's apps.
	page, err := o.ListJobs.Execute(as(store.RoleViewer, "ops"), &JobQuery{})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != ops.ID {
		t.Fatalf("viewer of ops lists %v, %v; want only job %d", page, err, ops.ID)
	}
	if _, err := o.GetJob.Execute(as(store.RoleAdmin, "*"), &JobRef{ID: 424242}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing job: %v, want store.ErrNotFound", err)
	}
}

func errOf[T any](_ T, err error) error { return err }
