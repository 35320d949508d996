package main

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestCLIResumeCatchesUpOnce: a job paused across ten of its minutely fires and resumed with
// `sundial job resume` fires once for all of them with fire_now, and not at all for them with
// do_nothing: the missed minutes are never replayed. (TestResumeAppliesMisfireOnce pins the
// rule on a fake clock; this drives it through the CLI and the API on a real server.)
func TestCLIResumeCatchesUpOnce(t *testing.T) {
	s := startAPIServer(t)
	ctx := context.Background()
	jobs := map[string]api.Job{}
	for _, policy := range []string{"fire_now", "do_nothing"} {
		j := mustJSON[api.Job](t, s, "job", "create", "minutely-"+policy, "--handler", "noop", "--cron", "0 * * * * ?", "--misfire", policy)
		s.mustCLI(t, "job", "pause", j.Name)
		// Ten minutes paused, without waiting them: the trigger's next fire goes back ten minutes.
		back := time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()
		if _, err := s.st.TriggersUpdateAfterFire(ctx, []store.TriggerFireUpdate{{ID: j.Triggers[0].ID, NextFireAt: back,
			StartAt: back, State: store.TriggerPaused}}); err != nil {
			t.Fatal(err)
		}
		jobs[policy] = j
	}
	// A fire the engine acquired before the pause (a job created just before a minute) still
	// runs: it is not one of the paused minutes, so the checks below leave it out.
	beforePause := map[int64]bool{}
	for _, j := range jobs {
		for _, x := range mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", j.Name).Items {
			beforePause[x.ID] = true
		}
	}
	afterResume := func(job string, order ...string) []api.Execution {
		args := append([]string{"exec", "list", "--job", job}, order...)
		var out []api.Execution
		for _, x := range mustJSON[api.Page[api.Execution]](t, s, args...).Items {
			if !beforePause[x.ID] {
				out = append(out, x)
			}
		}
		return out
	}
	resumed := time.Now()
	nextMinute := resumed.Truncate(time.Minute).Add(time.Minute)
	for _, j := range jobs {
		s.mustCLI(t, "job", "resume", j.Name)
	}
	// fire_now: one catch-up fire, now.
	var xs []api.Execution
	eventually(t, "the catch-up fire", func() bool {
		xs = afterResume(jobs["fire_now"].Name, "--order", "asc")
		return len(xs) > 0
	})
	for i, x := range xs {
		at := x.ScheduledAt.Time()
		if at.Before(resumed.Add(-time.Second)) || (i > 0 && at.Before(nextMinute)) {
			t.Errorf("fire_now: execution %d scheduled at %v (resumed at %v): a missed minute replayed", x.ID, at, resumed)
		}
	}
	// do_nothing: nothing before the next minute; its trigger waits for it.
	j := mustJSON[api.Job](t, s, "job", "get", jobs["do_nothing"].Name)
	next := mustJSON[api.TriggerNext](t, s, "trigger", "next", itoa(j.Triggers[0].ID), "-n", "1")
	if len(next.Fires) != 1 {
		t.Fatalf("do_nothing: next fires %v, want one", next.Fires)
	}
	if first, err := time.Parse(time.RFC3339Nano, next.Fires[0]); err != nil || first.Before(nextMinute) {
		t.Errorf("do_nothing: next fires %v after the resume, want none before %v", next.Fires, nextMinute)
	}
	for _, x := range afterResume(j.Name) {
		if x.ScheduledAt.Time().Before(nextMinute) {
			t.Errorf("do_nothing: execution %d scheduled at %v, before the next minute %v", x.ID, x.ScheduledAt.Time(), nextMinute)
		}
	}
}
