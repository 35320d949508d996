package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// streamExecutor starts a real SDK executor of app on the stream transport, with credential.
func (e *env) streamExecutor(app, credential, name string, handler func(context.Context) error) *executor.Executor {
	e.t.Helper()
	ex, err := executor.New(executor.Config{Server: e.url, Token: credential, App: app, Transport: executor.TransportStream,
		SpoolDir: e.t.TempDir()})
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

// TestStreamRunsAndResults: an executor on the stream transport listens on nothing, registers
// its stream address, takes a run down the stream and reports its output and result up it.
func TestStreamRunsAndResults(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		ex := e.streamExecutor("billing", execToken, "report", func(ctx context.Context) error {
			executor.Logger(ctx).Info("over the stream")
			return nil
		})
		if !strings.HasPrefix(ex.Address(), wire.StreamScheme) || ex.StreamsOpen() != 1 {
			t.Fatalf("address %q, %d streams open; want a stream address and 1", ex.Address(), ex.StreamsOpen())
		}
		var job api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "report", "handler": "report", "app": "billing",
			"routing": "round_robin", "triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, &job)
		run := e.onlyRunSucceeded(job.ID)
		if x := e.execution(run.ID); x.ExecutorAddress != ex.Address() {
			t.Errorf("ran on %q, want %q", x.ExecutorAddress, ex.Address())
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
		if !strings.Contains(out.Lines[0].Message, "over the stream") {
			t.Errorf("output %+v", out.Lines)
		}
	})
}
