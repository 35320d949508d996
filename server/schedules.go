package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// scheduleJSON is a trigger's schedule in the API: exactly one of Cron, EveryMs (with
// Repeat), Once, CalendarInterval and DailyInterval, plus the zone it is computed in.
type scheduleJSON struct {
	Cron *string `json:"cron,omitempty"`
	// EveryMs and Repeat make a simple trigger: fire at the start, then every EveryMs
	// milliseconds, Repeat more times (-1, the default, forever).
	EveryMs *int64 `json:"every_ms,omitempty"`
	Repeat  *int   `json:"repeat,omitempty"`
	// Once fires one time, at the start (default: now).
	Once             bool                  `json:"once,omitempty"`
	CalendarInterval *calendarIntervalJSON `json:"calendar_interval,omitempty"`
	DailyInterval    *dailyIntervalJSON    `json:"daily_interval,omitempty"`
	TimeZone         string                `json:"time_zone,omitempty"`
}

type calendarIntervalJSON struct {
	Interval     int    `json:"interval"`
	Unit         string `json:"unit"`
	PreserveHour bool   `json:"preserve_hour,omitempty"`
	SkipDay      bool   `json:"skip_day,omitempty"`
}

type dailyIntervalJSON struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Interval int    `json:"interval"`
	Unit     string `json:"unit"`
	Days     string `json:"days,omitempty"`
	Repeat   *int   `json:"repeat,omitempty"`
}

// triggerIn is a trigger as a request gives it.
type triggerIn struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	scheduleJSON
	Start    string `json:"start"`
	End      string `json:"end"`
	Calendar string `json:"calendar"`
	Priority int    `json:"priority"`
	Misfire  string `json:"misfire"`
}

// triggerOut is a trigger as the API shows it.
type triggerOut struct {
	ID    int64  `json:"id"`
	JobID int64  `json:"job_id"`
	Group string `json:"group"`
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	scheduleJSON
	Start        msTime `json:"start"`
	End          msTime `json:"end"`
	Calendar     string `json:"calendar,omitempty"`
	Priority     int    `json:"priority"`
	Misfire      string `json:"misfire"`
	State        string `json:"state"`
	ErrorMessage string `json:"error_message,omitempty"`
	NextFireAt   msTime `json:"next_fire_at"`
	PrevFireAt   msTime `json:"prev_fire_at"`
	TimesFired   int64  `json:"times_fired"`
	CreatedAt    msTime `json:"created_at"`
	UpdatedAt    msTime `json:"updated_at"`
}

// calendarSource resolves a stored calendar chain in a zone (the engine's, which caches).
type calendarSource interface {
	Calendar(ctx context.Context, ex store.Querier, name string, loc *time.Location) (schedule.Calendar, error)
}

// validate checks the trigger the way the engine will build it and returns it for the
// embedding API. Every problem is reported against its field under prefix ("triggers[0]").
func (in *triggerIn) validate(ctx context.Context, cals calendarSource, ex store.Querier, prefix string, limits InputLimits) (sundial.Trigger, error) {
	var out sundial.Trigger
	f := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	zone := in.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := schedule.LoadZone(zone)
	if err != nil {
		return out, invalidField(f("time_zone"), "%v", err)
	}
	sched, form, err := in.scheduleJSON.build(loc, f)
	if err != nil {
		return out, err
	}
	out = sundial.Trigger{Group: in.Group, Name: in.Name, Schedule: sched, TimeZone: zone, Calendar: in.Calendar, Priority: in.Priority}
	if in.Start != "" {
		if out.Start, err = parseTime(f("start"), in.Start); err != nil {
			return out, err
		}
	}
	if in.End != "" {
		if out.End, err = parseTime(f("end"), in.End); err != nil {
			return out, err
		}
	}
	if in.Misfire != "" {
		if out.Misfire, err = schedule.ParseMisfirePolicy(in.Misfire); err != nil {
			return out, invalidField(f("misfire"), "%v (want smart, ignore, fire_now, do_nothing, reschedule_now_existing, "+
				"reschedule_now_remaining, reschedule_next_remaining or reschedule_next_existing)", err)
		}
	}
	start := out.Start
	if start.IsZero() {
		start = time.Now()
	}
	tr := &schedule.Trigger{Schedule: sched, Start: start, End: out.End, Misfire: out.Misfire}
	if err := tr.Validate(); err != nil {
		field := f(form)
		switch msg := err.Error(); {
		case strings.Contains(msg, "end time"):
			field = f("end")
		case strings.Contains(msg, "misfire"):
			field = f("misfire")
		}
		return out, invalidField(field, "%v", err)
	}
	var cal schedule.Calendar
	if in.Calendar != "" {
		if cal, err = cals.Calendar(ctx, ex, in.Calendar, loc); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return out, invalidField(f("calendar"), "no calendar %q is stored", in.Calendar)
			}
			return out, fmt.Errorf("calendar %q: %w", in.Calendar, err)
		}
	}
	if _, err := tr.ComputeFirst(cal); err != nil {
		return out, invalidField(f(form), "%v", err)
	}
	return out, checkInterval(tr, cal, f(form), limits.MinInterval)
}

// build returns the schedule and the name of the field that gave it.
func (sj *scheduleJSON) build(loc *time.Location, f func(string) string) (schedule.Schedule, string, error) {
	var forms []string
	if sj.Cron != nil {
		forms = append(forms, "cron")
	}
	if sj.EveryMs != nil || sj.Repeat != nil {
		forms = append(forms, "every_ms")
	}
	if sj.Once {
		forms = append(forms, "once")
	}
	if sj.CalendarInterval != nil {
		forms = append(forms, "calendar_interval")
	}
	if sj.DailyInterval != nil {
		forms = append(forms, "daily_interval")
	}
	if len(forms) != 1 {
		field := f("cron")
		if len(forms) > 1 {
			field = f(forms[1])
		}
		return nil, "", invalidField(field, "give exactly one schedule: cron, every_ms (with repeat), once, calendar_interval or daily_interval (got %d)", len(forms))
	}
	switch form := forms[0]; form {
	case "cron":
		c, err := schedule.ParseCron(*sj.Cron, loc)
		if err != nil {
			return nil, "", invalidField(f("cron"), "%v", err)
		}
		return c, form, nil
	case "every_ms":
		repeat := schedule.RepeatForever
		if sj.Repeat != nil {
			repeat = *sj.Repeat
		}
		if repeat < schedule.RepeatForever {
			return nil, "", invalidField(f("repeat"), "want -1 (forever) or a count of repeats, got %d", repeat)
		}
		var every int64
		if sj.EveryMs != nil {
			every = *sj.EveryMs
		}
		if every < 1 && repeat != 0 {
			return nil, "", invalidField(f("every_ms"), "want at least 1 ms for a trigger that repeats, got %d", every)
		}
		return schedule.Simple{Interval: time.Duration(every) * time.Millisecond, RepeatCount: repeat}, form, nil
	case "once":
		return schedule.Simple{}, form, nil
	case "calendar_interval":
		ci := sj.CalendarInterval
		unit, err := schedule.ParseIntervalUnit(ci.Unit)
		if err != nil {
			return nil, "", invalidField(f("calendar_interval.unit"), "%v", err)
		}
		if ci.Interval < 1 {
			return nil, "", invalidField(f("calendar_interval.interval"), "want at least 1, got %d", ci.Interval)
		}
		return schedule.CalendarInterval{Interval: ci.Interval, Unit: unit, Location: loc,
			PreserveHourOfDay: ci.PreserveHour, SkipDayIfHourDoesNotExist: ci.SkipDay}, form, nil
	default:
		di := sj.DailyInterval
		from, err := parseTimeOfDay(di.From)
		if err != nil {
			return nil, "", invalidField(f("daily_interval.from"), "%v", err)
		}
		to, err := parseTimeOfDay(di.To)
		if err != nil {
			return nil, "", invalidField(f("daily_interval.to"), "%v", err)
		}
		unit, err := schedule.ParseIntervalUnit(di.Unit)
		if err != nil {
			return nil, "", invalidField(f("daily_interval.unit"), "%v", err)
		}
		days, err := schedule.ParseDays(di.Days)
		if err != nil {
			return nil, "", invalidField(f("daily_interval.days"), "%v", err)
		}
		repeat := schedule.RepeatForever
		if di.Repeat != nil {
			repeat = *di.Repeat
		}
		return schedule.DailyInterval{StartTimeOfDay: from, EndTimeOfDay: to, Days: days, Interval: di.Interval,
			Unit: unit, RepeatCount: repeat, Location: loc}, form, nil
	}
}

// parseTimeOfDay accepts HH:MM as well as HH:MM:SS.
func parseTimeOfDay(s string) (schedule.TimeOfDay, error) {
	if strings.Count(s, ":") == 1 {
		s += ":00"
	}
	return schedule.ParseTimeOfDay(s)
}

// scheduleOf turns a stored trigger's spec back into the API's form. A spec that no longer
// decodes is shown without a schedule (its trigger is in the error state anyway).
func scheduleOf(t *store.Trigger) scheduleJSON {
	sj := scheduleJSON{TimeZone: t.TimeZone}
	loc, err := schedule.LoadZone(t.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	sched, err := schedule.DecodeSpec(schedule.Kind(t.Kind), t.Spec, loc)
	if err != nil {
		return sj
	}
	switch s := sched.(type) {
	case *schedule.Cron:
		expr := s.String()
		sj.Cron = &expr
	case schedule.Simple:
		if s.Interval == 0 && s.RepeatCount == 0 {
			sj.Once = true
			break
		}
		ms, repeat := s.Interval.Milliseconds(), s.RepeatCount
		sj.EveryMs, sj.Repeat = &ms, &repeat
	case schedule.CalendarInterval:
		sj.CalendarInterval = &calendarIntervalJSON{Interval: s.Interval, Unit: s.Unit.String(),
			PreserveHour: s.PreserveHourOfDay, SkipDay: s.SkipDayIfHourDoesNotExist}
	case schedule.DailyInterval:
		days := make([]string, len(s.Days))
		for i, d := range s.Days {
			days[i] = strings.ToUpper(d.String()[:3])
		}
		repeat := s.RepeatCount
		sj.DailyInterval = &dailyIntervalJSON{From: s.StartTimeOfDay.String(), To: s.EndTimeOfDay.String(),
			Interval: s.Interval, Unit: s.Unit.String(), Days: strings.Join(days, ","), Repeat: &repeat}
	}
	return sj
}

func toTriggerOut(t *store.Trigger) triggerOut {
	return triggerOut{ID: t.ID, JobID: t.JobID, Group: t.Group, Name: t.Name, Kind: string(t.Kind),
		scheduleJSON: scheduleOf(t), Start: msTime(t.StartAt), End: msTime(t.EndAt), Calendar: t.CalendarName,
		Priority: t.Priority, Misfire: t.MisfirePolicy, State: string(t.State), ErrorMessage: t.ErrorMessage,
		NextFireAt: msTime(t.NextFireAt), PrevFireAt: msTime(t.PrevFireAt), TimesFired: t.TimesFired,
		CreatedAt: msTime(t.CreatedAt), UpdatedAt: msTime(t.UpdatedAt)}
}
