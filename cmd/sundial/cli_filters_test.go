package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestCLIListFilters: job list and exec list take every filter of the API as a flag, and a
// filtered list pages with --limit and --after.
func TestCLIListFilters(t *testing.T) {
	s := startAPIServer(t)
	daily := mustJSON[api.Job](t, s, "job", "create", "report-daily", "--group", "nightly", "--handler", "noop", "--cron", "0 0 2 * * ?")
	weekly := mustJSON[api.Job](t, s, "job", "create", "report-weekly", "--group", "nightly", "--handler", "report", "--app", "billing", "--cron", "0 0 2 ? * MON")
	cleanup := mustJSON[api.Job](t, s, "job", "create", "cleanup", "--handler", "noop", "--cron", "0 0 3 * * ?")
	s.mustCLI(t, "job", "pause", "cleanup")

	at := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	xs := []*store.Execution{
		{JobID: weekly.ID, ScheduledAt: at, FiredAt: at, FinishedAt: at + 5, Cause: store.CauseManual, State: store.ExecFailed,
			ExecutorAddress: "http://127.0.0.1:9001"},
		{JobID: daily.ID, ScheduledAt: at + 1, FiredAt: at + 1, FinishedAt: at + 5, Cause: store.CauseRetry, State: store.ExecSucceeded},
		{JobID: weekly.ID, ScheduledAt: at + 2, FiredAt: at + 2, FinishedAt: at + 5, Cause: store.CauseSchedule, State: store.ExecSucceeded,
			ExecutorAddress: "http://127.0.0.1:9002"},
		{JobID: weekly.ID, ScheduledAt: at + 3, FiredAt: at + 3, FinishedAt: at + 5, Cause: store.CauseSchedule, State: store.ExecFailed},
	}
	if _, err := s.st.ExecutionsInsert(context.Background(), xs); err != nil {
		t.Fatal(err)
	}

	jobs := func(args ...string) string {
		pg := mustJSON[api.Page[api.Job]](t, s, append([]string{"job", "list", "--all", "--limit", "1"}, args...)...)
		var ids []int64
		for _, j := range pg.Items {
			ids = append(ids, j.ID)
		}
		return fmt.Sprint(ids)
	}
	for _, tc := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--group", "nightly"}, []int64{daily.ID, weekly.ID}},
		{[]string{"--app", "billing"}, []int64{weekly.ID}},
		{[]string{"--handler", "noop"}, []int64{daily.ID, cleanup.ID}},
		{[]string{"--name-prefix", "REPORT-W"}, []int64{weekly.ID}},
		{[]string{"--state", "paused"}, []int64{cleanup.ID}},
		{[]string{"--state", "enabled", "--handler", "noop"}, []int64{daily.ID}},
		{[]string{"--state", "failing"}, []int64{weekly.ID}},
	} {
		if got := jobs(tc.args...); got != fmt.Sprint(tc.want) {
			t.Errorf("job list %v = %s, want %v", tc.args, got, tc.want)
		}
	}
	// The table says which job is paused.
	for _, line := range strings.Split(s.mustCLI(t, "job", "list"), "\n") {
		if strings.Contains(line, "cleanup") != strings.Contains(line, "paused") {
			t.Errorf("job list row %q: want paused on cleanup's row only", line)
		}
	}

	execs := func(args ...string) string {
		pg := mustJSON[api.Page[api.Execution]](t, s, append([]string{"exec", "list", "--all", "--limit", "1", "--order", "asc"}, args...)...)
		var ids []int64
		for _, x := range pg.Items {
			ids = append(ids, x.ID)
		}
		return fmt.Sprint(ids)
	}
	rfc := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--job", "nightly/report-daily"}, []int64{xs[1].ID}},
		{[]string{"--app", "billing", "--state", "failed"}, []int64{xs[0].ID, xs[3].ID}},
		{[]string{"--cause", "retry"}, []int64{xs[1].ID}},
		{[]string{"--executor", "http://127.0.0.1:9002"}, []int64{xs[2].ID}},
		{[]string{"--from", rfc(at + 1), "--to", rfc(at + 3)}, []int64{xs[1].ID, xs[2].ID}},
	} {
		if got := execs(tc.args...); got != fmt.Sprint(tc.want) {
			t.Errorf("exec list %v = %s, want %v", tc.args, got, tc.want)
		}
	}
	if code, _, errOut := runCLI(t, "", "exec", "list", "--cause", "boredom", "--server", s.url, "--token", s.token); code == 0 ||
		!strings.Contains(errOut, "cause") {
		t.Errorf("exec list --cause boredom: exit %d, %q; want an error naming cause", code, errOut)
	}
}
