package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// The catch-up policy is set and shown through the CLI, a bad one is refused naming its
// field, and a backfill is planned (dry run, nothing stored), run with each run marked and
// given its data interval, listed and canceled, on every database.
func TestCLICatchUpAndBackfill(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		job := mustJSON[api.Job](t, s, "job", "create", "nightly", "--handler", "noop", "--cron", "0 0 2 * * ?",
			"--catchup-window", "2h", "--catchup", "coalesce")
		if tr := job.Triggers[0]; tr.CatchUpWindow != "2h0m0s" || tr.CatchUp != "coalesce" {
			t.Fatalf("trigger catch-up %q %q, want 2h0m0s coalesce", tr.CatchUpWindow, tr.CatchUp)
		}
		if out := s.mustCLI(t, "trigger", "get", strconv.FormatInt(job.Triggers[0].ID, 10)); !strings.Contains(out, "Catch-up:") ||
			!strings.Contains(out, "coalesce") {
			t.Fatalf("trigger get shows no catch-up:\n%s", out)
		}
		for _, bad := range [][]string{{"--catchup-window", "soon"}, {"--catchup", "replay"}} {
			code, _, errOut := s.cli(t, append([]string{"job", "create", "bad", "--handler", "noop", "--cron", "0 0 2 * * ?"}, bad...)...)
			field := strings.TrimPrefix(strings.ReplaceAll(bad[0], "-", "_"), "__")
			if code == 0 || !strings.Contains(errOut, field) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%v: exit %d, %q; want one line naming %s", bad, code, errOut, field)
			}
		}

		plan := mustJSON[api.Backfill](t, s, "backfill", "run", "nightly", "--from", "2026-03-01T00:00:00Z",
			"--to", "2026-03-04T00:00:00Z", "--chunk", "2", "--dry-run")
		var got []string
		for _, r := range plan.Plan {
			got = append(got, rfc(r.IntervalStart)+" "+rfc(r.IntervalEnd))
		}
		want := []string{"2026-02-28T02:00:00Z 2026-03-02T02:00:00Z", "2026-03-02T02:00:00Z 2026-03-03T02:00:00Z"}
		if plan.ID != 0 || plan.Total != 3 || !slices.Equal(got, want) {
			t.Fatalf("dry run: id %d, %d times, runs %q; want none stored, 3 times, %q", plan.ID, plan.Total, got, want)
		}
		if bs := mustJSON[[]api.Backfill](t, s, "backfill", "list", "nightly"); len(bs) != 0 {
			t.Fatalf("the dry run stored %d backfills", len(bs))
		}
		if code, _, errOut := s.cli(t, "backfill", "run", "nightly", "--from", "2026-03-04T00:00:00Z", "--to", "2026-03-01T00:00:00Z"); code == 0 ||
			!strings.Contains(errOut, "to") {
			t.Errorf("a reversed range: exit %d, %q", code, errOut)
		}

		b := mustJSON[api.Backfill](t, s, "backfill", "run", "nightly", "--from", "2026-03-01T00:00:00Z", "--to", "2026-03-04T00:00:00Z",
			"--max-concurrent", "2")
		id := strconv.FormatInt(b.ID, 10)
		eventually(t, "the backfill to finish", func() bool {
			return mustJSON[api.Backfill](t, s, "backfill", "get", id).State == "done"
		})
		runs := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", "nightly", "--cause", "backfill")
		got = nil
		for _, x := range runs.Items {
			if x.BackfillID != b.ID || x.State != "succeeded" {
				t.Errorf("run %d: backfill %d, state %s", x.ID, x.BackfillID, x.State)
			}
			got = append(got, rfc(x.IntervalStart)+" "+rfc(x.IntervalEnd))
		}
		slices.Sort(got)
		want = []string{"2026-02-28T02:00:00Z 2026-03-01T02:00:00Z", "2026-03-01T02:00:00Z 2026-03-02T02:00:00Z",
			"2026-03-02T02:00:00Z 2026-03-03T02:00:00Z"}
		if !slices.Equal(got, want) {
			t.Errorf("backfill runs %q, want %q", got, want)
		}
		if out := s.mustCLI(t, "exec", "get", strconv.FormatInt(runs.Items[0].ID, 10)); !strings.Contains(out, "Backfill:") {
			t.Errorf("exec get does not say the run is a backfill's:\n%s", out)
		}
		if done := mustJSON[api.Backfill](t, s, "backfill", "cancel", id); done.State != "done" {
			t.Errorf("canceling a finished backfill changed it to %s", done.State)
		}
		if out := s.mustCLI(t, "backfill", "list", "nightly"); !strings.Contains(out, id) || !strings.Contains(out, "done") {
			t.Errorf("backfill list:\n%s", out)
		}
	})
}
