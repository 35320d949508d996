package main

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLITriggerZones: `trigger add --zone A --zone B` (or --zones A,B) stores a trigger of two
// zones; `trigger get` shows them and `trigger next` prints each fire with its zone, the same
// instant twice. A bad zone fails in one line naming it.
func TestCLITriggerZones(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "zoned", "--handler", "noop", "--cron", "0 0 12 * * ?")
	tr := mustJSON[api.Trigger](t, s, "trigger", "add", itoa(j.ID), "--cron", "0 30 1 * * ?",
		"--zone", "Europe/London", "--zone", "Africa/Abidjan", "--start", "2026-03-27T00:00:00Z")
	if strings.Join(tr.Zones, ",") != "Europe/London,Africa/Abidjan" {
		t.Fatalf("stored zones %q", tr.Zones)
	}
	if got := s.mustCLI(t, "trigger", "get", itoa(tr.ID)); !strings.Contains(got, "Europe/London, Africa/Abidjan") {
		t.Errorf("trigger get lacks the zones:\n%s", got)
	}
	text := s.mustCLI(t, "trigger", "next", itoa(tr.ID), "--after", "2026-03-28T00:00:00Z", "-n", "3")
	want := "2026-03-28T01:30:00.000Z  Sat  Europe/London\n2026-03-28T01:30:00.000Z  Sat  Africa/Abidjan\n" +
		"2026-03-29T01:30:00.000Z  Sun  Africa/Abidjan\n"
	if text != want {
		t.Errorf("trigger next:\n%s\nwant\n%s", text, want)
	}
	other := mustJSON[api.Trigger](t, s, "trigger", "add", itoa(j.ID), "--cron", "0 0 9 * * ?", "--zones", "Europe/Paris,Asia/Tokyo")
	if strings.Join(other.Zones, ",") != "Europe/Paris,Asia/Tokyo" {
		t.Errorf("--zones stored %q", other.Zones)
	}
	code, _, errOut := s.cli(t, "trigger", "add", itoa(j.ID), "--cron", "0 0 9 * * ?", "--zone", "Europe/Paris", "--zone", "Mars/Olympus")
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "zones[1]") {
		t.Errorf("bad zone: exit %d, stderr %q; want a failure in one line naming zones[1]", code, errOut)
	}
}

// TestCLITriggerUpdate: `trigger update` changes the policies its flags name and keeps the
// others; no flag, or a bad value, fails in one line naming it.
func TestCLITriggerUpdate(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "edited", "--handler", "noop", "--cron", "0 0 2 * * ?", "--jitter", "1m")
	id := itoa(j.Triggers[0].ID)
	tr := mustJSON[api.Trigger](t, s, "trigger", "update", id, "--catchup-window", "4h", "--catchup", "coalesce", "--dst", "once", "--misfire", "do_nothing")
	if tr.CatchUpWindow != "4h0m0s" || tr.CatchUp != "coalesce" || tr.DST != "once" || tr.Misfire != "do_nothing" || tr.JitterMs != 60_000 {
		t.Fatalf("updated trigger %+v", tr)
	}
	if got := s.mustCLI(t, "trigger", "update", id, "--jitter", "0"); !strings.Contains(got, "Jitter") || !strings.Contains(got, "coalesce") {
		t.Errorf("trigger update output:\n%s", got)
	}
	for _, bad := range [][]string{{}, {"--dst", "twice"}, {"--catchup", "sometimes"}} {
		code, _, errOut := s.cli(t, append([]string{"trigger", "update", id}, bad...)...)
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want a failure in one line", bad, code, errOut)
		}
	}
}
