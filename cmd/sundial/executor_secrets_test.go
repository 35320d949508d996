package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
)

// TestBuiltinScrubsPanics: a built-in handler's panic reaches the executor (which reports its
// value as the run's message) with the secret params masked.
func TestBuiltinScrubsPanics(t *testing.T) {
	run := executor.Run{ExecutionID: 1, Handler: "http", ParamsSecret: true, Params: `{"url":"http://h/?pw=PanicSecret"}`}
	ctx := jobrun.WithRun(context.Background(), run)
	h := builtin(func(ctx context.Context) error { panic("calling http://h/?pw=PanicSecret") })
	defer func() {
		got := fmt.Sprint(recover())
		if strings.Contains(got, "PanicSecret") || !strings.Contains(got, "pw=***") {
			t.Fatalf("panic value %q, want the secret masked", got)
		}
	}()
	_ = h(ctx)
}
