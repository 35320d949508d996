package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLIOverlap: --concurrency takes each overlap policy and the old names (stored under
// the new ones), --max-concurrent goes with at_most only, and bad input is refused with exit 2
// and one line naming the field, as the API's 400 names it.
func TestCLIOverlap(t *testing.T) {
	s := startAPIServer(t)
	for _, tc := range []struct{ given, stored string }{
		{"skip", "skip"}, {"buffer_one", "buffer_one"}, {"buffer_all", "buffer_all"}, {"cancel", "cancel"},
		{"terminate", "terminate"}, {"allow", "allow"}, {"serial", "buffer_all"}, {"discard", "skip"}, {"replace", "terminate"},
	} {
		j := mustJSON[api.Job](t, s, "job", "create", "j-"+tc.given, "--handler", "noop", "--concurrency", tc.given)
		if j.Concurrency != tc.stored || j.MaxConcurrent != 0 {
			t.Errorf("--concurrency %s: stored %s max %d, want %s", tc.given, j.Concurrency, j.MaxConcurrent, tc.stored)
		}
	}
	j := mustJSON[api.Job](t, s, "job", "create", "limited", "--handler", "noop", "--concurrency", "at_most", "--max-concurrent", "3")
	if j.Concurrency != "at_most" || j.MaxConcurrent != 3 {
		t.Fatalf("at_most 3: got %s %d", j.Concurrency, j.MaxConcurrent)
	}
	id := strconv.FormatInt(j.ID, 10)
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "at_most 3") {
		t.Errorf("job get does not show the limit:\n%s", out)
	}
	// Changing the policy drops the limit that went with at_most.
	if got := mustJSON[api.Job](t, s, "job", "update", id, "--concurrency", "skip"); got.Concurrency != "skip" || got.MaxConcurrent != 0 {
		t.Errorf("update to skip: %s %d", got.Concurrency, got.MaxConcurrent)
	}
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--concurrency", "at_most"}, "max_concurrent"},
		{[]string{"--concurrency", "at_most", "--max-concurrent", "1001"}, "max_concurrent"},
		{[]string{"--concurrency", "skip", "--max-concurrent", "2"}, "max_concurrent"},
		{[]string{"--concurrency", "sometimes"}, "concurrency"},
	} {
		code, _, errOut := s.cli(t, append([]string{"job", "create", "bad", "--handler", "noop"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.field) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("job create %v: exit %d, stderr %q; want 2 and one line naming %s", tc.args, code, errOut, tc.field)
		}
	}
}

// TestCLIRemainingRuns: --remaining-runs limits a trigger's runs (shown by trigger get and
// in the API's answer), and a negative count is refused naming the field.
func TestCLIRemainingRuns(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "limited", "--handler", "noop", "--cron", "0 0 * * * ?", "--remaining-runs", "3")
	if len(j.Triggers) != 1 || j.Triggers[0].RemainingRuns == nil || *j.Triggers[0].RemainingRuns != 3 {
		t.Fatalf("job create --remaining-runs 3: triggers %+v", j.Triggers)
	}
	if out := s.mustCLI(t, "trigger", "get", strconv.FormatInt(j.Triggers[0].ID, 10)); !strings.Contains(out, "Remaining runs") || !strings.Contains(out, "3") {
		t.Errorf("trigger get does not show the remaining runs:\n%s", out)
	}
	code, _, errOut := s.cli(t, "trigger", "add", strconv.FormatInt(j.ID, 10), "--cron", "0 0 * * * ?", "--remaining-runs", "-1")
	if code != 2 || !strings.Contains(errOut, "remaining_runs") {
		t.Errorf("trigger add --remaining-runs -1: exit %d, stderr %q", code, errOut)
	}
}

// TestCLIPauseNote: job pause --note records who paused the job, why and when (job get and
// the API's job show them), resume clears them, and an over-long note is refused naming the
// field.
func TestCLIPauseNote(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "noted", "--handler", "noop", "--cron", "0 0 * * * ?")
	id := strconv.FormatInt(j.ID, 10)
	p := mustJSON[api.Job](t, s, "job", "pause", id, "--note", "db migration until 14:00")
	if !p.Paused || p.PauseNote != "db migration until 14:00" || p.PausedBy == "" || p.PausedAt == nil {
		t.Fatalf("paused job: paused %v by %q at %v note %q", p.Paused, p.PausedBy, p.PausedAt, p.PauseNote)
	}
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "paused by "+p.PausedBy) || !strings.Contains(out, "db migration until 14:00") {
		t.Errorf("job get does not show the pause note:\n%s", out)
	}
	if r := mustJSON[api.Job](t, s, "job", "resume", id); r.Paused || r.PauseNote != "" || r.PausedBy != "" || r.PausedAt != nil {
		t.Errorf("resumed job keeps its pause: %+v", r)
	}
	code, _, errOut := s.cli(t, "job", "pause", id, "--note", strings.Repeat("x", 501))
	if code != 2 || !strings.Contains(errOut, "note") {
		t.Errorf("job pause with 501 characters: exit %d, stderr %q", code, errOut)
	}
}

// TestCLIPauseAfterFailures: --pause-after-failures is stored, shown by job get, and a count
// out of range is refused naming the field.
func TestCLIPauseAfterFailures(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "guarded", "--handler", "noop", "--pause-after-failures", "3")
	if j.PauseAfterFailures != 3 {
		t.Fatalf("pause_after_failures %d, want 3", j.PauseAfterFailures)
	}
	if out := s.mustCLI(t, "job", "get", strconv.FormatInt(j.ID, 10)); !strings.Contains(out, "3 (0 in a row now)") {
		t.Errorf("job get does not show pause on failure:\n%s", out)
	}
	code, _, errOut := s.cli(t, "job", "create", "bad", "--handler", "noop", "--pause-after-failures", "1001")
	if code != 2 || !strings.Contains(errOut, "pause_after_failures") {
		t.Errorf("--pause-after-failures 1001: exit %d, stderr %q", code, errOut)
	}
}
