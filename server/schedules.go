package server

import (
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// triggerOf reads a trigger request for the scheduler, which checks the rest (the
// schedule against the trigger's times and calendar).
func triggerOf(in *api.TriggerRequest) (sundial.Trigger, error) {
	sched, err := in.Schedule.Build()
	if err != nil {
		return sundial.Trigger{}, err
	}
	start, end, err := in.Times()
	if err != nil {
		return sundial.Trigger{}, err
	}
	misfire, err := in.MisfirePolicy()
	if err != nil {
		return sundial.Trigger{}, err
	}
	dst, err := in.DSTPolicy()
	if err != nil {
		return sundial.Trigger{}, err
	}
	// Checked before it becomes a Duration, which a count of milliseconds could overflow.
	if err := schedule.ValidateJitter(in.JitterMs); err != nil {
		return sundial.Trigger{}, err
	}
	window, catchUp, err := in.CatchUpPolicy()
	if err != nil {
		return sundial.Trigger{}, err
	}
	zone := in.TimeZone
	if zone == "" && len(in.Zones) == 0 {
		zone = "UTC"
	}
	return sundial.Trigger{Group: in.Group, Name: in.Name, Schedule: sched, TimeZone: zone, Start: start, End: end,
		Calendar: in.Calendar, Priority: in.Priority, Misfire: misfire, Description: in.Description,
		Params: in.Params, Data: in.Data, DST: dst,
		Jitter: time.Duration(in.JitterMs) * time.Millisecond, CatchUpWindow: window, CatchUp: catchUp,
		RemainingRuns: in.RemainingRuns, Zones: in.Zones}, nil
}

// nestField puts a field error under prefix ("triggers[0]"); other errors pass.
func nestField(err error, prefix string) error {
	if fe, ok := schedule.AsField(err); ok {
		return fe.In(prefix)
	}
	return err
}

// scheduleField reports a problem the scheduler found with the schedule as a whole (its
// field "schedule", under prefix) against the JSON field that gave it ("cron"); other
// errors pass.
func scheduleField(err error, prefix string, sj *api.Schedule) error {
	want := "schedule"
	if prefix != "" {
		want = prefix + ".schedule"
	}
	fe, ok := schedule.AsField(err)
	if !ok || fe.Field != want {
		return err
	}
	return (&schedule.FieldError{Field: sj.Form(), Err: fe.Err}).In(prefix)
}

// scheduleOf turns a stored trigger's spec back into the API's form. A spec that no longer
// decodes is shown without a schedule (its trigger is in the error state anyway).
func scheduleOf(t *store.Trigger) api.Schedule {
	loc, err := schedule.LoadZone(t.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	sched, err := schedule.DecodeSpec(schedule.Kind(t.Kind), t.Spec, loc)
	if err != nil {
		return api.Schedule{TimeZone: t.TimeZone}
	}
	return api.ScheduleOf(sched, t.TimeZone)
}

func toTriggerOut(t *store.Trigger) api.Trigger {
	return api.Trigger{ID: t.ID, JobID: t.JobID, Group: t.Group, Name: t.Name, Kind: string(t.Kind),
		Description: t.Description, Params: secret.Shown(t.Params), Data: t.Data,
		Schedule: scheduleOf(t), Start: api.Time(t.StartAt), End: api.Time(t.EndAt), Calendar: t.CalendarName,
		Priority: t.Priority, Misfire: t.MisfirePolicy, State: string(t.State), ErrorMessage: t.ErrorMessage,
		NextFireAt: api.Time(t.NextFireAt), PrevFireAt: api.Time(t.PrevFireAt), TimesFired: t.TimesFired,
		CreatedAt: api.Time(t.CreatedAt), UpdatedAt: api.Time(t.UpdatedAt),
		JitterMs: t.JitterMs, DST: dstShown(t.DSTPolicy), CatchUp: t.CatchUp,
		CatchUpWindow: catchUpWindowOf(t), RemainingRuns: remainingRuns(t), Zones: t.Zones}
}

// dstShown is a stored DST policy as the API shows it: its name, quartz for the default.
func dstShown(stored string) string {
	if stored == "" {
		return schedule.DSTQuartz.String()
	}
	return stored
}

// catchUpWindowOf shows a trigger's own catch-up window as a duration; "" when it has none.
func catchUpWindowOf(t *store.Trigger) string {
	if t.CatchUpWindow == 0 {
		return ""
	}
	return (time.Duration(t.CatchUpWindow) * time.Millisecond).String()
}

// remainingRuns is how many more times t fires when its runs are limited.
func remainingRuns(t *store.Trigger) *int64 {
	if t.RunLimit == 0 {
		return nil
	}
	n := max(t.RunLimit-t.TimesFired, 0)
	return &n
}
