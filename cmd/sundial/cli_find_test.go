package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestCLIJobByName: every command that takes a job takes its name, in the default group or as
// GROUP/NAME, and the API finds it with ?name=.
func TestCLIJobByName(t *testing.T) {
	s := startAPIServer(t)
	hourly := mustJSON[api.Job](t, s, "job", "create", "hourly", "--handler", "noop", "--cron", "0 0 * * * ?")
	other := mustJSON[api.Job](t, s, "job", "create", "hourly", "--group", "nightly", "--handler", "noop", "--cron", "0 0 2 * * ?")

	for ref, want := range map[string]int64{"hourly": hourly.ID, "default/hourly": hourly.ID, "nightly/hourly": other.ID} {
		if j := mustJSON[api.Job](t, s, "job", "get", ref); j.ID != want || len(j.Triggers) != 1 {
			t.Errorf("job get %s: job %d with %d triggers, want %d with its trigger", ref, j.ID, len(j.Triggers), want)
		}
	}
	if tr := mustJSON[api.Page[api.Trigger]](t, s, "trigger", "list", "--job", "nightly/hourly"); len(tr.Items) != 1 || tr.Items[0].JobID != other.ID {
		t.Errorf("trigger list --job nightly/hourly: %+v", tr.Items)
	}
	x := mustJSON[api.Execution](t, s, "job", "run", "nightly/hourly")
	if xs := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", "nightly/hourly"); len(xs.Items) != 1 || xs.Items[0].ID != x.ID {
		t.Errorf("exec list --job nightly/hourly: %+v, want only execution %d", xs.Items, x.ID)
	}

	// The API: ?name= is a page of the one job, or of none.
	c, err := api.NewClient(s.url, s.token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []struct{ group, name string }{{"nightly", "hourly"}, {"", "nightly/hourly"}} {
		j, err := c.FindJob(ctx, q.group, q.name)
		if err != nil || j.ID != other.ID {
			t.Errorf("FindJob(%q, %q): %v, %v; want job %d", q.group, q.name, j, err, other.ID)
		}
	}
	if _, err := c.FindJob(ctx, "", "nosuch"); !api.IsNotFound(err) {
		t.Errorf("FindJob of a missing job: %v, want the API's 404", err)
	}
}

// TestCLIPausedJobShowsPaused: a paused job says so in job get and in the API, and resuming
// makes it enabled again.
func TestCLIPausedJobShowsPaused(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "job", "create", "hourly", "--handler", "noop", "--cron", "0 0 * * * ?")
	if out := s.mustCLI(t, "job", "get", "hourly"); !strings.Contains(out, "State:") || strings.Contains(out, "paused") {
		t.Errorf("job get before pausing:\n%s", out)
	}
	s.mustCLI(t, "job", "pause", "hourly")
	if out := s.mustCLI(t, "job", "get", "hourly"); !strings.Contains(out, "paused") {
		t.Errorf("job get of a paused job does not say paused:\n%s", out)
	}
	if j := mustJSON[api.Job](t, s, "job", "get", "hourly"); !j.Paused {
		t.Errorf("the API's job after pause: paused %v", j.Paused)
	}
	s.mustCLI(t, "job", "resume", "hourly")
	if j := mustJSON[api.Job](t, s, "job", "get", "hourly"); j.Paused {
		t.Errorf("the API's job after resume: paused %v", j.Paused)
	}
}

// TestCLIOutputYAML: -o yaml prints the API's document, field names and all, as YAML.
func TestCLIOutputYAML(t *testing.T) {
	s := startAPIServer(t)
	want := mustJSON[api.Job](t, s, "job", "create", "hourly", "--handler", "noop", "--cron", "0 0 * * * ?")
	for _, args := range [][]string{{"job", "get", "hourly"}, {"job", "list"}} {
		out := s.mustCLI(t, append(args, "-o", "yaml")...)
		if !strings.Contains(out, "handler: noop") {
			t.Errorf("%v -o yaml:\n%s\nwant the API's field names", args, out)
		}
	}
	var got api.Job
	if err := yaml.Unmarshal([]byte(s.mustCLI(t, "job", "get", "hourly", "-o", "yaml")), &got); err != nil || got.ID != want.ID || got.Name != "hourly" {
		t.Errorf("job get -o yaml reads back as %+v (%v), want job %d", got, err, want.ID)
	}
}

// TestCLIExecListLateness: exec list shows when a run was scheduled, when it fired and how
// late that was.
func TestCLIExecListLateness(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "job", "create", "now", "--handler", "noop")
	run := mustJSON[api.Execution](t, s, "job", "run", "now")
	var x api.Execution
	eventually(t, "the run to fire", func() bool {
		x = mustJSON[api.Execution](t, s, "exec", "get", itoa(run.ID))
		return !x.FiredAt.IsZero()
	})
	out := s.mustCLI(t, "exec", "list", "--job", "now")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(strings.Join(strings.Fields(lines[0]), " "), "SCHEDULED FIRED LATE") {
		t.Fatalf("exec list:\n%s\nwant the header with SCHEDULED, FIRED and LATE and one run", out)
	}
	late := x.FiredAt.Time().Sub(x.ScheduledAt.Time()).Round(time.Millisecond).String()
	if !strings.Contains(lines[1], " "+late+" ") {
		t.Errorf("exec list row %q: want the lateness %s", lines[1], late)
	}
}

// TestCLICompletion: sundial completion writes a completion script for each shell.
func TestCLICompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := runCLI(t, "", "completion", sh)
		if code != 0 || !strings.Contains(out, "sundial") || len(out) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), errOut)
		}
	}
}

// TestCLITriggerNext: a stored trigger's next fire times come with its calendar applied, in
// its zone, across a DST change, from the CLI and the API.
func TestCLITriggerNext(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "calendar", "put", "closed", "--spec", "holiday:2030-03-09")
	j := mustJSON[api.Job](t, s, "job", "create", "night", "--handler", "noop", "--cron", "0 30 2 * * ?",
		"--tz", "America/New_York", "--start", "2030-03-08T00:00:00-05:00", "--calendar", "closed")
	id := itoa(j.Triggers[0].ID)
	// 03-09 is a holiday; 02:30 does not exist on 03-10, the spring-forward day.
	want := "2030-03-08T02:30:00.000-05:00  Fri\n2030-03-11T02:30:00.000-04:00  Mon\n2030-03-12T02:30:00.000-04:00  Tue\n"
	if out := s.mustCLI(t, "trigger", "next", id, "-n", "3"); out != want {
		t.Errorf("trigger next:\n%s\nwant\n%s", out, want)
	}
	next := mustJSON[api.TriggerNext](t, s, "trigger", "next", id, "-n", "3")
	if next.TimeZone != "America/New_York" || next.Misfired || len(next.Fires) != 3 || next.Fires[1] != "2030-03-11T02:30:00.000-04:00" {
		t.Errorf("the API's preview: %+v", next)
	}
	if code, _, errOut := s.cli(t, "trigger", "next", id, "-n", "0"); code != 2 || !strings.Contains(errOut, "--count") {
		t.Errorf("trigger next -n 0: exit %d, %q: want 2 naming --count", code, errOut)
	}
	// From a given instant: strictly after it, the holiday and the gap day skipped alike.
	want = "2030-03-11T02:30:00.000-04:00  Mon\n2030-03-12T02:30:00.000-04:00  Tue\n"
	if out := s.mustCLI(t, "trigger", "next", id, "--after", "2030-03-08T02:30:00-05:00", "-n", "2"); out != want {
		t.Errorf("trigger next --after:\n%s\nwant\n%s", out, want)
	}
	after := mustJSON[api.TriggerNext](t, s, "trigger", "next", id, "--after", "2030-03-11T07:30:00Z", "-n", "1")
	if after.After != "2030-03-11T07:30:00.000Z" || len(after.Fires) != 1 || after.Fires[0] != "2030-03-12T02:30:00.000-04:00" {
		t.Errorf("the API's preview after an instant: %+v", after)
	}
	if code, _, errOut := s.cli(t, "trigger", "next", id, "--after", "tomorrow"); code != 2 || !strings.Contains(errOut, "--after") {
		t.Errorf("trigger next --after tomorrow: exit %d, %q: want 2 naming --after", code, errOut)
	}
}

// TestCLILenientCronWarns: cron syntax Quartz reads leniently is stored as Quartz reads it,
// and job create and trigger add say so on standard error and in the API's answer.
func TestCLILenientCronWarns(t *testing.T) {
	s := startAPIServer(t)
	code, out, errOut := s.cli(t, "job", "create", "biweekly", "--handler", "noop", "--cron", "0 0 12 ? * MON/2", "-o", "json")
	if code != 0 || !strings.Contains(errOut, "warning: triggers[0].cron: ") || !strings.Contains(errOut, "MON") ||
		!strings.Contains(out, `"warnings":["triggers[0].cron: `) {
		t.Errorf("job create with MON/2: exit %d, stdout %s, stderr %q: want the warning on both", code, out, errOut)
	}
	code, out, errOut = s.cli(t, "trigger", "add", "--job", "biweekly", "--cron", "0 0 9 ? * TUE/2", "-o", "json")
	if code != 0 || !strings.Contains(errOut, "warning: cron: ") || !strings.Contains(out, `"warnings":["cron: `) {
		t.Errorf("trigger add with TUE/2: exit %d, stdout %s, stderr %q: want the warning on both", code, out, errOut)
	}
	if _, _, errOut := s.cli(t, "job", "create", "plain", "--handler", "noop", "--cron", "0 0 12 ? * MON"); strings.Contains(errOut, "warning") {
		t.Errorf("a plain cron warns: %q", errOut)
	}
}

// TestCLIExecListAlarm: exec list --alarm sending lists the alarms claimed for delivery and
// not recorded (a node that died mid-delivery leaves them so), and only those.
func TestCLIExecListAlarm(t *testing.T) {
	s := startAPIServer(t)
	ctx := context.Background()
	j := mustJSON[api.Job](t, s, "job", "create", "alarmed", "--handler", "noop", "--cron", "0 0 2 * * ?", "--alarm", "ops@example.com")
	// Fired now: failures of 1970 are history the leader's retention may delete at any time.
	now := time.Now().UnixMilli()
	xs := []*store.Execution{
		{JobID: j.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseAPI, State: store.ExecFailed, AlarmState: store.AlarmPending},
		{JobID: j.ID, ScheduledAt: now + 1, FiredAt: now + 1, Cause: store.CauseAPI, State: store.ExecFailed, AlarmState: store.AlarmSent},
	}
	if _, err := s.st.ExecutionsInsert(ctx, xs); err != nil {
		t.Fatal(err)
	}
	if won, err := s.st.ExecutionsSetAlarm(ctx, []int64{xs[0].ID}, store.AlarmPending, store.AlarmSending); err != nil || len(won) != 1 {
		t.Fatalf("claim the alarm: %v, %v", won, err)
	}
	got := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--alarm", "sending")
	if len(got.Items) != 1 || got.Items[0].ID != xs[0].ID || got.Items[0].AlarmState != "sending" {
		t.Errorf("exec list --alarm sending: %+v, want only execution %d", got.Items, xs[0].ID)
	}
	if code, _, stderr := s.cli(t, "exec", "list", "--alarm", "lost"); code == 0 || !strings.Contains(stderr, "alarm_state") {
		t.Errorf("exec list --alarm lost: exit %d, %q; want refused naming alarm_state", code, stderr)
	}
}

// TestCLITriggerParamsData: trigger add takes the trigger's own description, params and data,
// trigger get shows them, and bad data or params for a script job exit non-zero naming the
// flag or field.
func TestCLITriggerParamsData(t *testing.T) {
	s := startAPIServer(t)
	mustJSON[api.Job](t, s, "job", "create", "report", "--handler", "noop", "--data", `{"region":"us"}`)
	tr := mustJSON[api.Trigger](t, s, "trigger", "add", "--job", "report", "--cron", "0 0 2 * * ?",
		"--description", "the EU run", "--params", "--region eu", "--data", `{"region":"eu","batch":5}`)
	if tr.Description != "the EU run" || tr.Params != "--region eu" || tr.Data["region"] != "eu" || tr.Data["batch"] != 5.0 {
		t.Fatalf("trigger add answered %+v", tr)
	}
	out := s.mustCLI(t, "trigger", "get", itoa(tr.ID))
	for _, want := range []string{"Description:    the EU run\n", "Params:         --region eu\n", `Data:           {"batch":5,"region":"eu"}` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("trigger get:\n%s\nwant a line %q", out, want)
		}
	}
	if code, _, errOut := s.cli(t, "trigger", "add", "--job", "report", "--once", "--data", "[1]"); code != 2 || !strings.Contains(errOut, "--data") {
		t.Errorf("trigger add --data [1]: exit %d, %q: want 2 naming --data", code, errOut)
	}
	s.mustCLI(t, "job", "create", "script", "--handler", "shell", "--app", "ops", "--params", "echo hi")
	if code, _, errOut := s.cli(t, "trigger", "add", "--job", "script", "--once", "--params", "rm -rf /"); code == 0 || !strings.Contains(errOut, "params") {
		t.Errorf("trigger add --params to a script job: exit %d, %q: want refused naming params", code, errOut)
	}
}
