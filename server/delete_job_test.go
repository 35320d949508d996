package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
)

// TestDeleteJobWithLiveRun deletes a job while its run on a real executor prints 40 lines:
// without force the delete is refused, saying why; with force the run finishes, and its
// result and all 40 lines are kept (the server used to refuse the output of a deleted job's
// run, and the executor logged the lines lost) — on every database.
func TestDeleteJobWithLiveRun(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		started, release := make(chan struct{}), make(chan struct{})
		e.sdkExecutor("billing", "slow", func(ctx context.Context) error {
			log := executor.Logger(ctx)
			for i := 1; i <= 20; i++ {
				log.Info(fmt.Sprintf("line %d", i))
			}
			close(started)
			<-release
			for i := 21; i <= 40; i++ {
				log.Info(fmt.Sprintf("line %d", i))
			}
			return nil
		})

		var job api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "slow-shell", "handler": "slow", "app": "billing",
			"routing": "round_robin", "triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, &job)
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not start")
		}
		path := "/api/v1/jobs/" + itoa(job.ID)
		refused := e.callErr("DELETE", path, nil, http.StatusConflict)
		if refused.Code != "failed_precondition" || !strings.Contains(refused.Message, "1 run(s) in progress") ||
			!strings.Contains(refused.Message, "force") {
			t.Errorf("delete without force: %+v, want a refusal naming the run in progress and force", refused)
		}
		e.call("DELETE", path+"?force=true", nil, http.StatusNoContent, nil)
		e.call("GET", path, nil, http.StatusNotFound, nil)
		close(release)

		run := e.onlyRunSucceeded(job.ID)
		var out api.Page[api.LogLine]
		e.call("GET", "/api/v1/executions/"+itoa(run.ID)+"/output?limit=100", nil, 200, &out)
		if len(out.Items) != 40 || out.Items[39].Message != "line 40" {
			t.Errorf("kept %d lines, want all 40 ending with line 40", len(out.Items))
		}
		if run.OutputLost != 0 {
			t.Errorf("output_lost %d, want 0", run.OutputLost)
		}
	})
}
