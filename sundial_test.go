package sundial_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
)

// A setting given both as a shorthand and in Engine must agree: the scheduler used to take
// the shorthand silently.
func TestConfigSettingsHaveOneValue(t *testing.T) {
	st := teststore.Open(t, "sqlite")
	for _, tc := range []struct {
		name string
		cfg  sundial.Config
		want string // "" for no error
	}{
		{"shorthand", sundial.Config{Store: st, MisfireThreshold: time.Minute}, ""},
		{"engine", sundial.Config{Store: st, Engine: engine.Config{MisfireThreshold: time.Minute}}, ""},
		{"same twice", sundial.Config{Store: st, MisfireThreshold: time.Minute, Engine: engine.Config{MisfireThreshold: time.Minute}}, ""},
		{"store in engine", sundial.Config{Engine: engine.Config{Store: st}}, ""},
		{"misfire", sundial.Config{Store: st, MisfireThreshold: time.Minute, Engine: engine.Config{MisfireThreshold: time.Second}},
			"Config.MisfireThreshold (1m0s) and Config.Engine.MisfireThreshold (1s) disagree"},
		{"node", sundial.Config{Store: st, NodeID: "a", Engine: engine.Config{NodeID: "b"}}, "Config.NodeID (a) and Config.Engine.NodeID (b)"},
		{"drain", sundial.Config{Store: st, DrainTimeout: time.Second, Engine: engine.Config{DrainTimeout: 2 * time.Second}}, "Config.DrainTimeout"},
		{"max running", sundial.Config{Store: st, MaxRunning: 1, Engine: engine.Config{MaxRunning: 2}}, "Config.MaxRunning"},
		{"heartbeat", sundial.Config{Store: st, HeartbeatInterval: time.Second, Engine: engine.Config{HeartbeatInterval: 2 * time.Second}}, "Config.HeartbeatInterval"},
		{"dispatcher", sundial.Config{Store: st, Engine: engine.Config{Dispatcher: nopDispatcher{}}}, "Config.Engine.Dispatcher"},
		{"no store", sundial.Config{}, "Config.Store is required"},
	} {
		_, err := sundial.New(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

type nopDispatcher struct{}

func (nopDispatcher) Dispatch(context.Context, *engine.Fire) engine.Result { return engine.Result{} }

// Every check of the scheduler names its field with a typed error, so the server (and any
// embedding program) can point at it without reading the message.
func TestScheduleJobNamesTheBadField(t *testing.T) {
	st := teststore.Open(t, "sqlite")
	s, err := sundial.New(sundial.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cron, err := sundial.Cron("0 0 * * * ?", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	ok := sundial.Trigger{Schedule: cron}
	job := sundial.Job{Name: "j", Handler: "noop"}
	for _, tc := range []struct {
		name  string
		job   sundial.Job
		trigs []sundial.Trigger
		field string
	}{
		{"no name", sundial.Job{Handler: "noop"}, nil, "name"},
		{"no handler", sundial.Job{Name: "j"}, nil, "handler"},
		{"negative timeout", sundial.Job{Name: "j", Handler: "noop", Timeout: -time.Second}, nil, "timeout_ms"},
		{"routing without app", sundial.Job{Name: "j", Handler: "noop", Routing: "first"}, nil, "routing"},
		{"bad alarm", sundial.Job{Name: "j", Handler: "noop", AlarmTargets: []string{"ops@example.com", "gopher://x"}}, nil, "alarm_targets[1]"},
		{"bad concurrency", sundial.Job{Name: "j", Handler: "noop", Concurrency: "sometimes"}, nil, "concurrency"},
		{"end before start", job, []sundial.Trigger{ok, {Schedule: cron, Start: start, End: start.Add(-time.Hour)}}, "triggers[1].end"},
		{"no schedule", job, []sundial.Trigger{{}}, "triggers[0].schedule"},
		{"bad zone", job, []sundial.Trigger{{Schedule: cron, TimeZone: "Mars/Olympus"}}, "triggers[0].time_zone"},
		{"no calendar", job, []sundial.Trigger{{Schedule: cron, Calendar: "nope"}}, "triggers[0].calendar"},
		{"duplicate name", job, []sundial.Trigger{ok, {Schedule: cron, Name: "j#1"}}, "triggers[1].name"},
	} {
		_, err := s.ScheduleJob(ctx, tc.job, tc.trigs...)
		var fe *sundial.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: error %v, want a FieldError for %s", tc.name, err, tc.field)
		}
	}
	// Every trigger is checked before the job is written: a bad trigger of a job whose name
	// is taken is reported as the bad trigger.
	if _, err := s.ScheduleJob(ctx, job, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScheduleJob(ctx, job, sundial.Trigger{Schedule: cron, Start: start, End: start.Add(-time.Hour)}); err == nil {
		t.Error("a second job j with a bad trigger was stored")
	} else if fe, ok := schedule.AsField(err); !ok || fe.Field != "triggers[0].end" {
		t.Errorf("a second job j with a bad trigger: %v, want the trigger's end named", err)
	}
	if err := s.PutCalendar(ctx, sundial.Calendar{Name: "c", Spec: "weekly:1,7", Base: "missing"}); err == nil {
		t.Error("calendar on a missing base stored")
	} else if fe, ok := schedule.AsField(err); !ok || fe.Field != "base" {
		t.Errorf("calendar on a missing base: %v, want a FieldError for base", err)
	}
	if err := s.PutCalendar(ctx, sundial.Calendar{Name: "c", Spec: "weekly:9"}); err == nil {
		t.Error("bad calendar spec stored")
	} else if fe, ok := schedule.AsField(err); !ok || fe.Field != "spec" {
		t.Errorf("bad calendar spec: %v, want a FieldError for spec", err)
	}
	if err := s.PutCalendar(ctx, sundial.Calendar{Name: "c", Spec: "weekly:1,7", Zone: "Mars/Olympus"}); err == nil {
		t.Error("calendar in an unknown zone stored")
	} else if fe, ok := schedule.AsField(err); !ok || fe.Field != "zone" || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("calendar in an unknown zone: %v, want a FieldError for zone naming it", err)
	}
}

// A stored calendar with a zone of its own is read in it when the scheduler computes its
// trigger's fire times: 03:00 in Paris is 21:00 the day before in New York, so New York's
// weekend takes the Paris Sunday and Monday fires (Quartz converts the fire time to its
// calendar's TimeZone). Read in the trigger's zone, Monday would fire.
func TestCalendarInItsOwnZone(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	s, err := sundial.New(sundial.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutCalendar(ctx, sundial.Calendar{Name: "ny-weekends", Spec: "weekly:1,7", Zone: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	cron, err := sundial.Cron("0 0 3 * * ?", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	start := time.Date(2030, 1, 5, 12, 0, 0, 0, paris) // a Saturday
	if _, err := s.ScheduleJob(ctx, sundial.Job{Name: "j", Handler: "noop"}, sundial.Trigger{Group: "g", Name: "t", Schedule: cron,
		TimeZone: "Europe/Paris", Start: start, Calendar: "ny-weekends"}); err != nil {
		t.Fatal(err)
	}
	row, err := st.TriggerGetByKey(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := time.UnixMilli(row.NextFireAt).In(paris), time.Date(2030, 1, 8, 3, 0, 0, 0, paris); !got.Equal(want) {
		t.Errorf("first fire %s, want %s (Tuesday: Sunday and Monday 03:00 in Paris are New York's weekend)", got, want)
	}
}
