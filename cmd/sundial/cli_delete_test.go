package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestCLIDeleteJobWithLiveRun: `job delete` refuses a job whose run is in progress, saying
// so and naming --force; with --force it deletes the job and the run stays. `execution get`
// says when a run's output was cut. On every database.
func TestCLIDeleteJobWithLiveRun(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		job := mustJSON[api.Job](t, s, "job", "create", "slow-shell", "--handler", "noop", "--cron", "0 0 2 * * ?")
		at := time.Now().UnixMilli()
		running := &store.Execution{JobID: job.ID, ScheduledAt: at, FiredAt: at, Cause: store.CauseManual,
			Node: "elsewhere", State: store.ExecRunning}
		cut := &store.Execution{JobID: job.ID, ScheduledAt: at + 1, FiredAt: at + 1, FinishedAt: at + 2,
			Cause: store.CauseManual, State: store.ExecSucceeded, OutputLost: 34}
		if _, err := s.st.ExecutionsInsert(context.Background(), []*store.Execution{running, cut}); err != nil {
			t.Fatal(err)
		}

		code, _, errOut := s.cli(t, "job", "delete", "slow-shell")
		if code == 0 || !strings.Contains(errOut, "1 run(s) in progress") || !strings.Contains(errOut, "--force") {
			t.Errorf("delete without --force: exit %d, %q; want a refusal naming the run and --force", code, errOut)
		}
		if out := s.mustCLI(t, "job", "delete", "slow-shell", "--force"); !strings.Contains(out, "Deleted job") {
			t.Errorf("delete --force: %q", out)
		}
		if code, _, _ := s.cli(t, "job", "get", itoa(job.ID)); code == 0 {
			t.Error("the job is still there")
		}
		if x := mustJSON[api.Execution](t, s, "exec", "get", itoa(running.ID)); x.State != "running" {
			t.Errorf("the run of the deleted job is %q, want still running", x.State)
		}
		if out := s.mustCLI(t, "exec", "get", itoa(cut.ID)); !strings.Contains(out, "cut: 34 line(s) never reached the server") {
			t.Errorf("execution get of a cut run does not say so:\n%s", out)
		}
	})
}
