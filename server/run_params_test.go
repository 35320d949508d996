package server

import (
	"context"
	"errors"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
)

// POST /jobs/{id}/run with params: the handler is given them, the execution records them
// (and a run without a body gets the job's); a script job refuses them at the field; the
// executions list filters by app and cause.
func TestRunWithParamsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		given := make(chan string, 4)
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			s.Register("echo", func(ctx context.Context) error {
				given <- sundial.ExecutionFrom(ctx).Params
				return nil
			})
		})
		c := e.client()
		ctx := context.Background()
		j, err := c.CreateJob(ctx, api.JobRequest{Name: "report", Handler: "echo", Params: "--month=1"})
		if err != nil {
			t.Fatal(err)
		}
		x, err := c.RunJobWith(ctx, j.ID, api.RunRequest{Params: "--month=2"})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-given; got != "--month=2" || x.Params != "--month=2" || x.Cause != "manual" {
			t.Fatalf("run with params: handler got %q, execution %+v", got, x)
		}
		plain, err := c.RunJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-given; got != "--month=1" || plain.Params != "" {
			t.Fatalf("run without a body: handler got %q, params %q", got, plain.Params)
		}
		if got, err := c.GetExecution(ctx, x.ID); err != nil || got.Params != "--month=2" || got.ScriptVersion != 0 {
			t.Fatalf("get execution: %+v, %v", got, err)
		}

		sh, err := c.CreateJob(ctx, api.JobRequest{Name: "script", Handler: "shell", App: "ops", Params: "echo hi\n"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.RunJobWith(ctx, sh.ID, api.RunRequest{Params: "rm -rf /"})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "params" {
			t.Fatalf("params for a script job: %v, want 400 at params", err)
		}

		for _, tc := range []struct {
			f    api.ExecutionFilter
			want int
		}{
			{api.ExecutionFilter{Cause: "manual"}, 2},
			{api.ExecutionFilter{App: "ops"}, 0},
			{api.ExecutionFilter{App: "", JobID: j.ID, Cause: "retry"}, 0},
		} {
			page, err := c.ListExecutions(ctx, tc.f, api.ListOptions{})
			if err != nil || len(page.Items) != tc.want {
				t.Errorf("list %+v: %d items (%v), want %d", tc.f, len(page.Items), err, tc.want)
			}
		}
		if _, err := c.ListExecutions(ctx, api.ExecutionFilter{Cause: "whim"}, api.ListOptions{}); !errors.As(err, &ae) || ae.Field != "cause" {
			t.Fatalf("a bad cause: %v, want an error at cause", err)
		}
	})
}
