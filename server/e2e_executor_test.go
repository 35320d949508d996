package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
)

// TestExecutorEndToEnd runs a remote job through the REST API on a real executor built with
// the executor SDK: the executor registers, the job fires on it, its output lines and its
// result come back, and the execution shows them — on every database.
func TestExecutorEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		ex := e.sdkExecutor("billing", "report", func(ctx context.Context) error {
			run, _ := executor.RunFrom(ctx)
			executor.Logger(ctx).Info("building the report", "params", run.Params)
			return nil
		})

		var job api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "report", "handler": "report", "app": "billing",
			"routing": "round_robin", "params": "month=11", "triggers": []any{map[string]any{"once": true}}},
			http.StatusCreated, &job)
		run := e.onlyRunSucceeded(job.ID)
		if x := e.execution(run.ID); x.ExecutorAddress != ex.Address() {
			t.Errorf("ran on %q, want the executor %q", x.ExecutorAddress, ex.Address())
		}
		var out struct {
			Lines []struct {
				Message string `json:"message"`
			} `json:"items"`
		}
		eventually(t, "the output line", func() bool {
			e.call("GET", "/api/v1/executions/"+itoa(run.ID)+"/output", nil, 200, &out)
			return len(out.Lines) > 0
		})
		if !strings.Contains(out.Lines[0].Message, "building the report") || !strings.Contains(out.Lines[0].Message, "month=11") {
			t.Errorf("output %+v", out.Lines)
		}
	})
}

// sdkExecutor starts a real executor of app, built with the SDK, that runs handler as name.
func (e *env) sdkExecutor(app, name string, handler func(context.Context) error) *executor.Executor {
	e.t.Helper()
	ex, err := executor.New(executor.Config{Server: e.url, Token: execToken, App: app,
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: e.t.TempDir()})
	if err != nil {
		e.t.Fatal(err)
	}
	ex.Handle(name, handler)
	if err := ex.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex
}

// onlyRunSucceeded waits for the one execution of job to succeed and returns it.
func (e *env) onlyRunSucceeded(job int64) api.Execution {
	e.t.Helper()
	var run api.Execution
	eventually(e.t, "the run to succeed", func() bool {
		var page api.Page[api.Execution]
		e.call("GET", "/api/v1/executions?job_id="+itoa(job), nil, 200, &page)
		if len(page.Items) == 1 {
			run = page.Items[0]
		}
		return run.State == "succeeded"
	})
	return run
}
