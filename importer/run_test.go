package importer_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

var now = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// corePlan is a plan with one of each thing the core carries: an app, chained calendars, a
// script job with history whose child is a job planned after it, a paused trigger, a trigger
// with stored state, a paused group, and a job the scheduler refuses.
func corePlan(t *testing.T) *importer.Plan {
	cron, err := sundial.Cron("0 0 2 * * ?", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return &importer.Plan{
		Source: "test",
		Apps: []*importer.App{{App: sundial.App{Name: "billing", Title: "Billing", AddressMode: store.AddressManual,
			Addresses: []string{"http://10.0.0.5:9999"}, Protocol: "xxl-job"}, Generation: "2.x"}},
		Calendars: []*importer.Calendar{
			{Calendar: sundial.Calendar{Name: "xmas", Spec: "holiday:2026-12-25", Base: "weekend"}},
			{Calendar: sundial.Calendar{Name: "weekend", Spec: "weekly:1,7"}},
		},
		Jobs: []*importer.Job{
			{Job: sundial.Job{Group: "billing", Name: "report", Handler: "shell", App: "billing", Routing: "round_robin",
				Params: "echo v3", Concurrency: sundial.Serial, MaxRetries: 2, Timeout: 30 * time.Second,
				AlarmTargets: []string{"ops@example.com"}},
				Source:   "job 1",
				Children: []importer.Key{{Group: "billing", Name: "mail"}},
				Scripts:  []importer.Script{{Source: "echo v1", Note: "first"}, {Source: "echo v2", Note: "second"}, {Source: "echo v3", Note: "third"}},
				Triggers: []*importer.Trigger{{Trigger: sundial.Trigger{Schedule: cron, Calendar: "xmas", Misfire: schedule.MisfireDoNothing}, Paused: true}}},
			{Job: sundial.Job{Group: "billing", Name: "mail", Handler: "mailer", App: "billing"}, Source: "job 2",
				Triggers: []*importer.Trigger{{Trigger: sundial.Trigger{Group: "g2", Name: "every", Schedule: schedule.Simple{Interval: time.Hour, RepeatCount: 10},
					Start: now.Add(-5 * time.Hour)}, NextFire: now.Add(time.Hour), TimesFired: 6}}},
			{Job: sundial.Job{Group: "billing", Name: "bad", Handler: "x", App: "billing", Routing: "sideways"}, Source: "job 3"},
		},
		PausedGroups: []string{"g2"},
	}
}

// TestRunDryApplyAgain: a dry run writes nothing, an apply creates the plan, a second apply
// changes nothing, and a change in the source is an update — on each of Sundial's databases
// (a refusal must not end a PostgreSQL transaction).
func TestRunDryApplyAgain(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(d, func(t *testing.T) { testRunDryApplyAgain(t, d) })
	}
}

func testRunDryApplyAgain(t *testing.T, dialect string) {
	ctx := context.Background()
	st := teststore.Open(t, dialect)
	s, err := sundial.New(sundial.Config{Store: st, Clock: clock.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	// A dry run says what it would do and writes nothing.
	p := corePlan(t)
	if err := importer.Run(ctx, s, p, false); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Print(&out, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"create    app billing: \"Billing\", manual http://10.0.0.5:9999, protocol xxl-job 2.x",
		"create    calendar weekend: weekly:1,7",
		"create    job billing/report: app billing handler shell routing round_robin, buffer_all, retries 2, timeout 30s, alarm ops@example.com, children billing/mail, script with 3 versions",
		"create    trigger billing/report#1: cron \"0 0 2 * * ?\" Europe/Berlin, calendar xmas, misfire do_nothing, paused, next 2026-03-03 02:00:00 CET",
		"create    trigger g2/every: every 1h0m0s, 10 repeats, misfire smart, next 2026-03-02 10:30:00 UTC",
		"refused   job billing/bad: ",
		"Summary: apps: 1 create; calendars: 2 create; jobs: 2 create, 1 refused; triggers: 2 create; not imported: 0",
		"Dry run: nothing was written.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run printed\n%s\nwant a line with %q", out.String(), want)
		}
	}
	if js, _ := st.JobList(ctx, store.JobFilter{Limit: 10}); len(js) != 0 {
		t.Fatalf("the dry run stored %d jobs", len(js))
	}

	p = corePlan(t)
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	report, err := st.JobGetByKey(ctx, "billing", "report")
	if err != nil {
		t.Fatal(err)
	}
	mail, err := st.JobGetByKey(ctx, "billing", "mail")
	if err != nil {
		t.Fatal(err)
	}
	if len(report.ChildJobIDs) != 1 || report.ChildJobIDs[0] != mail.ID || report.Params != "echo v3" {
		t.Errorf("report: children %v params %q, want [%d] and echo v3", report.ChildJobIDs, report.Params, mail.ID)
	}
	vs, err := st.ScriptVersionList(ctx, report.ID)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, v := range vs {
		notes = append(notes, v.Note+"="+v.Script)
	}
	if got := strings.Join(notes, ";"); got != "third=echo v3;second=echo v2;first=echo v1" {
		t.Errorf("script versions (newest first) %s", got)
	}
	tr, err := st.TriggerGetByKey(ctx, "billing", "report#1")
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != store.TriggerPaused || tr.CalendarName != "xmas" {
		t.Errorf("report's trigger: state %s calendar %q, want paused with xmas", tr.State, tr.CalendarName)
	}
	every, err := st.TriggerGetByKey(ctx, "g2", "every")
	if err != nil {
		t.Fatal(err)
	}
	if every.NextFireAt != now.Add(time.Hour).UnixMilli() || every.TimesFired != 6 || every.State != store.TriggerPaused {
		t.Errorf("stored state not carried over: next %v fired %d state %s", time.UnixMilli(every.NextFireAt).UTC(), every.TimesFired, every.State)
	}
	app, err := st.AppGet(ctx, "billing")
	if err != nil || app.Protocol != store.ProtocolXXLJob || app.ProtocolVersion != "2.x" || app.AddressMode != store.AddressManual {
		t.Errorf("app: %+v, %v", app, err)
	}
	// A token set on the app (by its own call) survives an import that updates the app.
	app.XXLTokenHash = "ab12"
	if err := st.AppPut(ctx, app); err != nil {
		t.Fatal(err)
	}
	p = corePlan(t)
	p.Apps[0].Title, p.Apps[0].Generation = "Billing executors", "3.3"
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	if a := p.Apps[0]; a.Action != importer.Update || strings.Join(a.Changes, ",") != "title,protocol_version" {
		t.Errorf("a changed app: %s %v, want an update of title,protocol_version", a.Action, a.Changes)
	}
	if app, err = st.AppGet(ctx, "billing"); err != nil || app.XXLTokenHash != "ab12" || app.ProtocolVersion != "3.3" {
		t.Errorf("after the update: %+v, %v; want the token kept and generation 3.3", app, err)
	}
	app.Title, app.ProtocolVersion = "Billing", "2.x"
	if err := st.AppPut(ctx, app); err != nil {
		t.Fatal(err)
	}

	// Again: nothing changes.
	p = corePlan(t)
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	if p.Changed() {
		out.Reset()
		_ = p.Print(&out, true)
		t.Errorf("a second run changed something:\n%s", out.String())
	}
	if vs2, _ := st.ScriptVersionList(ctx, report.ID); len(vs2) != len(vs) {
		t.Errorf("the second run added script versions: %d, was %d", len(vs2), len(vs))
	}

	entries, err := st.AuditList(ctx, store.AuditFilter{Action: "import.apply", Limit: 10})
	if err != nil || len(entries) != 3 || entries[0].Target != "test" {
		t.Errorf("audit entries of the three applies: %d (%v), want 3 naming the source", len(entries), err)
	}

	// A trigger resumed in Sundial stays so, though the source still has it stopped: the
	// source's state is the state a trigger is created in.
	if err := s.ResumeTrigger(ctx, tr.ID); err != nil {
		t.Fatal(err)
	}
	p = corePlan(t)
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	if tr, err := st.TriggerGet(ctx, tr.ID); err != nil || tr.State != store.TriggerWaiting || p.Changed() {
		t.Errorf("after a resume and an import: state %s (%v), changed %v; want waiting, unchanged", tr.State, err, p.Changed())
	}

	// A trigger name another job holds refuses the job that wants it, and nothing else.
	p = corePlan(t)
	p.Jobs = append(p.Jobs, &importer.Job{Job: sundial.Job{Group: "other", Name: "thief", Handler: "x"},
		Triggers: []*importer.Trigger{{Trigger: sundial.Trigger{Group: "g2", Name: "every", Schedule: schedule.Simple{}}}}})
	if err := importer.Run(ctx, s, p, false); err != nil {
		t.Fatal(err)
	}
	if j := p.Jobs[len(p.Jobs)-1]; j.Action != importer.Refused || !strings.Contains(j.Reason, "g2/every is taken by job") {
		t.Errorf("a job wanting another's trigger: %s %q", j.Action, j.Reason)
	}

	// A change in the source is an update, with what changed; a new script is one version.
	// The alarm policy set on the job in Sundial (no source has one) stays.
	policy := store.AlarmPolicy{Threshold: 3, SilenceMs: 60000, Recovery: true}
	if cur, err := st.JobGet(ctx, report.ID); err != nil {
		t.Fatal(err)
	} else if cur.AlarmPolicy = policy; st.JobUpdate(ctx, cur) != nil {
		t.Fatal("set the alarm policy")
	}
	p = corePlan(t)
	p.Jobs[0].Params = "echo v4"
	p.Jobs[0].Scripts = append(p.Jobs[0].Scripts, importer.Script{Source: "echo v4", Note: "fourth"})
	p.Jobs[0].Timeout = time.Minute
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	if j := p.Jobs[0]; j.Action != importer.Update || strings.Join(j.Changes, ",") != "params,timeout" {
		t.Errorf("changed job: %s %v, want update of params,timeout", j.Action, j.Changes)
	}
	if vs3, _ := st.ScriptVersionList(ctx, report.ID); len(vs3) != len(vs)+1 || vs3[0].Note != "fourth" {
		t.Errorf("after a changed script: %d versions, newest %q", len(vs3), vs3[0].Note)
	}
	if cur, err := st.JobGet(ctx, report.ID); err != nil || cur.AlarmPolicy != policy {
		t.Errorf("after the update the alarm policy is %+v (%v), want %+v kept", cur.AlarmPolicy, err, policy)
	}
}

// newScheduler is a scheduler (not started) on a fresh database of the dialect.
func newScheduler(t *testing.T, dialect string) (*sundial.Scheduler, store.Store) {
	t.Helper()
	st := teststore.Open(t, dialect)
	s, err := sundial.New(sundial.Config{Store: st, Clock: clock.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestRunChildScope: an import goes through the scheduler's child-job check, scope included:
// run for a caller who may run only alpha's jobs, a planned alpha job's child that is a
// stored job of beta is left out (and said so), its child in alpha is set.
func TestRunChildScope(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			s, st := newScheduler(t, d)
			if _, err := s.ScheduleJob(ctx, sundial.Job{Group: "beta", Name: "pay", Handler: "h", App: "beta"}); err != nil {
				t.Fatal(err)
			}
			p := &importer.Plan{Source: "test", Jobs: []*importer.Job{
				{Job: sundial.Job{Group: "alpha", Name: "report", Handler: "h", App: "alpha"}, Source: "job 1",
					Children: []importer.Key{{Group: "alpha", Name: "mail"}, {Group: "beta", Name: "pay"}}},
				{Job: sundial.Job{Group: "alpha", Name: "mail", Handler: "h", App: "alpha"}, Source: "job 2"},
			}}
			alphaOnly := sundial.WithMayRun(ctx, func(app string) bool { return app == "alpha" })
			if err := importer.Run(alphaOnly, s, p, true); err != nil {
				t.Fatal(err)
			}
			if len(p.Unmapped) != 1 || p.Unmapped[0].Item != "job 1: child jobs" ||
				!strings.Contains(p.Unmapped[0].Reason, store.ErrOutOfScope.Error()) {
				t.Fatalf("unmapped %+v, want job 1's children refused as out of scope", p.Unmapped)
			}
			report, err := st.JobGetByKey(ctx, "alpha", "report")
			if err != nil {
				t.Fatal(err)
			}
			if len(report.ChildJobIDs) != 0 {
				t.Fatalf("report's children %v, want none stored", report.ChildJobIDs)
			}
		})
	}
}

// TestRunRefusesBadNames: an import is held to the scheduler's one name rule: a blank job
// name, an app name with a zero-width space and a calendar name with a bidi control are
// refused (naming the field), the rest is imported.
func TestRunRefusesBadNames(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			s, st := newScheduler(t, d)
			p := &importer.Plan{Source: "test",
				Apps:      []*importer.App{{App: sundial.App{Name: "bill\u200bing"}, Source: "app 1"}},
				Calendars: []*importer.Calendar{{Calendar: sundial.Calendar{Name: "xmas\u202e", Spec: "holiday:2026-12-25"}, Source: "cal 1"}},
				Jobs: []*importer.Job{
					{Job: sundial.Job{Group: "g", Name: "   ", Handler: "h"}, Source: "job 1"},
					{Job: sundial.Job{Group: "g", Name: "fine", Handler: "h"}, Source: "job 2"},
				}}
			if err := importer.Run(ctx, s, p, true); err != nil {
				t.Fatal(err)
			}
			for _, o := range []struct {
				what string
				out  importer.Outcome
			}{{"app", p.Apps[0].Outcome}, {"calendar", p.Calendars[0].Outcome}, {"blank job", p.Jobs[0].Outcome}} {
				if o.out.Action != importer.Refused || !strings.Contains(o.out.Reason, "name: must not") {
					t.Errorf("%s: %+v, want refused naming name", o.what, o.out)
				}
			}
			if p.Jobs[1].Action != importer.Create {
				t.Errorf("the good job: %+v", p.Jobs[1].Outcome)
			}
			if js, _ := st.JobList(ctx, store.JobFilter{Limit: 10}); len(js) != 1 || js[0].Name != "fine" {
				t.Fatalf("stored jobs %+v, want the good one only", js)
			}
		})
	}
}
