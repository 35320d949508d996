package main

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLITriggerJitterAndDST: `job create --jitter --dst` stores both policies, `trigger get`
// shows them, and `trigger next` lists each fire's jittered start and marks the fire the DST
// policy moved out of the spring gap (New York, 2027-03-14: 02:30 does not exist, once fires
// at 03:00). A bad policy or jitter fails with one line naming it.
func TestCLITriggerJitterAndDST(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "spread", "--handler", "noop", "--cron", "0 30 2 * * ?",
		"--tz", "America/New_York", "--start", "2027-03-13T00:00:00-05:00", "--jitter", "90s", "--dst", "once")
	tr := j.Triggers[0]
	if tr.JitterMs != 90_000 || tr.DST != "once" {
		t.Fatalf("stored trigger: jitter %d, dst %q; want 90000, once", tr.JitterMs, tr.DST)
	}
	got := s.mustCLI(t, "trigger", "get", itoa(tr.ID))
	for _, want := range []string{"1m30s", "once"} {
		if !strings.Contains(got, want) {
			t.Errorf("trigger get lacks %q:\n%s", want, got)
		}
	}
	next := mustJSON[api.TriggerNext](t, s, "trigger", "next", itoa(tr.ID), "--after", "2027-03-13T00:00:00-05:00", "-n", "3")
	want := []string{"2027-03-13T02:30:00.000-05:00", "2027-03-14T03:00:00.000-04:00", "2027-03-15T02:30:00.000-04:00"}
	if strings.Join(next.Fires, " ") != strings.Join(want, " ") || len(next.Due) != 3 || strings.Join(next.DST, ",") != ",gap," {
		t.Fatalf("trigger next: fires %v, due %v, dst %q; want %v, 3 starts, the second marked gap", next.Fires, next.Due, next.DST, want)
	}
	text := s.mustCLI(t, "trigger", "next", itoa(tr.ID), "--after", "2027-03-13T00:00:00-05:00", "-n", "3")
	if !strings.Contains(text, "2027-03-14T03:00:00.000-04:00  Sun  starts "+next.Due[1]+"  DST gap") {
		t.Errorf("trigger next text:\n%s", text)
	}
	for _, bad := range [][]string{{"--dst", "twice"}, {"--jitter", "-1s"}, {"--jitter", "25h"}} {
		code, _, errOut := s.cli(t, append([]string{"job", "create", "bad", "--handler", "noop", "--cron", "0 0 * * * ?"}, bad...)...)
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: exit %d, stderr %q; want a failure in one line naming the flag's field", bad, code, errOut)
		}
	}
}

// TestScheduleNextDST: `schedule next --dst` previews a DST policy offline and marks the fires
// next to a change, as the server's preview does; a simple schedule refuses a policy.
func TestScheduleNextDST(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "0 30 2 * * ?", "--dst", "once", "--from", "2026-03-07T00:00:00"},
			"2026-03-07T02:30:00.000-05:00  Sat\n2026-03-08T03:00:00.000-04:00  Sun  DST gap\n2026-03-09T02:30:00.000-04:00  Mon\n"},
		{[]string{"--cron", "0 30 2 * * ?", "--dst", "once_skip_gap", "--from", "2026-03-07T00:00:00"},
			"2026-03-07T02:30:00.000-05:00  Sat\n2026-03-09T02:30:00.000-04:00  Mon\n2026-03-10T02:30:00.000-04:00  Tue\n"},
		{[]string{"--cron", "0 0 * * * ?", "--from", "2026-11-01T00:30:00"},
			"2026-11-01T01:00:00.000-05:00  Sun  DST overlap\n2026-11-01T02:00:00.000-05:00  Sun\n2026-11-01T03:00:00.000-05:00  Sun\n"},
		{[]string{"--cron", "0 0 * * * ?", "--dst", "once", "--from", "2026-11-01T00:30:00"},
			"2026-11-01T01:00:00.000-04:00  Sun  DST overlap\n2026-11-01T02:00:00.000-05:00  Sun\n2026-11-01T03:00:00.000-05:00  Sun\n"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"schedule", "next", "--tz", "America/New_York", "-n", "3"}, tc.args...)...)
		if code != 0 || out != tc.want {
			t.Errorf("%v: exit %d %s\n%s\nwant\n%s", tc.args, code, errOut, out, tc.want)
		}
	}
	code, _, errOut := runCLI(t, "", "schedule", "next", "--every", "1h", "--dst", "once")
	if code == 0 || !strings.Contains(errOut, "--dst") {
		t.Errorf("a simple schedule with --dst: exit %d, %q", code, errOut)
	}
}
