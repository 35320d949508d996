package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// Schedule is a trigger's schedule: exactly one of Cron, EveryMs (with Repeat), Once,
// CalendarInterval and DailyInterval, plus the zone it is computed in. Triggers embed it, so
// its fields sit beside the trigger's own in the JSON.
type Schedule struct {
	Cron *string `json:"cron,omitempty"`
	// EveryMs and Repeat make a simple trigger: fire at the start, then every EveryMs
	// milliseconds, Repeat more times (-1, the default, forever).
	EveryMs *int64 `json:"every_ms,omitempty"`
	Repeat  *int   `json:"repeat,omitempty"`
	// Once fires one time, at the start (default: now).
	Once             bool              `json:"once,omitempty"`
	CalendarInterval *CalendarInterval `json:"calendar_interval,omitempty"`
	DailyInterval    *DailyInterval    `json:"daily_interval,omitempty"`
	// TimeZone is an IANA name or an offset like +05:30; default UTC.
	TimeZone string `json:"time_zone,omitempty"`
}

// CalendarInterval fires every Interval Units of the zone's calendar.
type CalendarInterval struct {
	Interval     int    `json:"interval"`
	Unit         string `json:"unit"`
	PreserveHour bool   `json:"preserve_hour,omitempty"`
	SkipDay      bool   `json:"skip_day,omitempty"`
}

// DailyInterval fires every Interval Units between two times of day (HH:MM or HH:MM:SS), on
// Days (e.g. MON-FRI; default every day), Repeat more times a day (-1, the default, forever).
type DailyInterval struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Interval int    `json:"interval"`
	Unit     string `json:"unit"`
	Days     string `json:"days,omitempty"`
	Repeat   *int   `json:"repeat,omitempty"`
}

// forms lists the schedule fields given, in the JSON's order.
func (s *Schedule) forms() []string {
	var forms []string
	if s.Cron != nil {
		forms = append(forms, "cron")
	}
	if s.EveryMs != nil || s.Repeat != nil {
		forms = append(forms, "every_ms")
	}
	if s.Once {
		forms = append(forms, "once")
	}
	if s.CalendarInterval != nil {
		forms = append(forms, "calendar_interval")
	}
	if s.DailyInterval != nil {
		forms = append(forms, "daily_interval")
	}
	return forms
}

// Form names the field that gives the schedule ("cron", "every_ms", "once",
// "calendar_interval" or "daily_interval"): where a problem with the schedule as a whole is
// reported.
func (s *Schedule) Form() string {
	if f := s.forms(); len(f) > 0 {
		return f[0]
	}
	return "cron"
}

// Build checks the schedule and returns it in its zone. A problem is a *schedule.FieldError
// naming the field.
func (s *Schedule) Build() (schedule.Schedule, error) {
	zone := s.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := schedule.LoadZone(zone)
	if err != nil {
		return nil, &schedule.FieldError{Field: "time_zone", Err: err}
	}
	forms := s.forms()
	if len(forms) != 1 {
		field := "cron"
		if len(forms) > 1 {
			field = forms[1]
		}
		return nil, schedule.Fieldf(field, "give exactly one schedule: cron, every_ms (with repeat), once, calendar_interval or daily_interval (got %d)", len(forms))
	}
	switch forms[0] {
	case "cron":
		c, err := schedule.ParseCron(*s.Cron, loc)
		if err != nil {
			return nil, &schedule.FieldError{Field: "cron", Err: err}
		}
		return c, nil
	case "every_ms":
		repeat := schedule.RepeatForever
		if s.Repeat != nil {
			repeat = *s.Repeat
		}
		var every int64
		if s.EveryMs != nil {
			every = *s.EveryMs
		}
		simple := schedule.Simple{Interval: time.Duration(every) * time.Millisecond, RepeatCount: repeat}
		var fe *schedule.FieldError
		if err := simple.Check(); errors.As(err, &fe) {
			field := map[string]string{"RepeatCount": "repeat", "Interval": "every_ms"}[fe.Field]
			return nil, &schedule.FieldError{Field: field, Err: fe.Err}
		}
		return simple, nil
	case "once":
		return schedule.Simple{}, nil
	case "calendar_interval":
		ci := s.CalendarInterval
		unit, err := schedule.ParseIntervalUnit(ci.Unit)
		if err != nil {
			return nil, &schedule.FieldError{Field: "calendar_interval.unit", Err: err}
		}
		if ci.Interval < 1 {
			return nil, schedule.Fieldf("calendar_interval.interval", "want at least 1, got %d", ci.Interval)
		}
		return schedule.CalendarInterval{Interval: ci.Interval, Unit: unit, Location: loc,
			PreserveHourOfDay: ci.PreserveHour, SkipDayIfHourDoesNotExist: ci.SkipDay}, nil
	default:
		di := s.DailyInterval
		from, err := parseTimeOfDay(di.From)
		if err != nil {
			return nil, &schedule.FieldError{Field: "daily_interval.from", Err: err}
		}
		to, err := parseTimeOfDay(di.To)
		if err != nil {
			return nil, &schedule.FieldError{Field: "daily_interval.to", Err: err}
		}
		unit, err := schedule.ParseIntervalUnit(di.Unit)
		if err != nil {
			return nil, &schedule.FieldError{Field: "daily_interval.unit", Err: err}
		}
		days, err := schedule.ParseDays(di.Days)
		if err != nil {
			return nil, &schedule.FieldError{Field: "daily_interval.days", Err: err}
		}
		repeat := schedule.RepeatForever
		if di.Repeat != nil {
			repeat = *di.Repeat
		}
		return schedule.DailyInterval{StartTimeOfDay: from, EndTimeOfDay: to, Days: days, Interval: di.Interval,
			Unit: unit, RepeatCount: repeat, Location: loc}, nil
	}
}

// parseTimeOfDay accepts HH:MM as well as HH:MM:SS.
func parseTimeOfDay(s string) (schedule.TimeOfDay, error) {
	if strings.Count(s, ":") == 1 {
		s += ":00"
	}
	return schedule.ParseTimeOfDay(s)
}

// ScheduleOf is the API's form of a schedule computed in zone.
func ScheduleOf(sched schedule.Schedule, zone string) Schedule {
	out := Schedule{TimeZone: zone}
	switch s := sched.(type) {
	case *schedule.Cron:
		expr := s.String()
		out.Cron = &expr
	case schedule.Simple:
		if s.Interval == 0 && s.RepeatCount == 0 {
			out.Once = true
			break
		}
		ms, repeat := s.Interval.Milliseconds(), s.RepeatCount
		out.EveryMs, out.Repeat = &ms, &repeat
	case schedule.CalendarInterval:
		out.CalendarInterval = &CalendarInterval{Interval: s.Interval, Unit: s.Unit.String(),
			PreserveHour: s.PreserveHourOfDay, SkipDay: s.SkipDayIfHourDoesNotExist}
	case schedule.DailyInterval:
		days := make([]string, len(s.Days))
		for i, d := range s.Days {
			days[i] = strings.ToUpper(d.String()[:3])
		}
		repeat := s.RepeatCount
		out.DailyInterval = &DailyInterval{From: s.StartTimeOfDay.String(), To: s.EndTimeOfDay.String(),
			Interval: s.Interval, Unit: s.Unit.String(), Days: strings.Join(days, ","), Repeat: &repeat}
	}
	return out
}

// Summary is a one-line summary of the schedule ("cron 0 0 * * * ?", "every 1m0s, 3 times");
// empty when none is set.
func (s *Schedule) Summary() string {
	var out string
	switch {
	case s.Cron != nil:
		out = "cron " + *s.Cron
	case s.Once:
		return "once"
	case s.EveryMs != nil:
		out = "every "
		if *s.EveryMs != 0 {
			out += (time.Duration(*s.EveryMs) * time.Millisecond).String()
		}
		if s.Repeat != nil && *s.Repeat >= 0 {
			out += fmt.Sprintf(", %d times", *s.Repeat+1)
		}
		return out
	case s.CalendarInterval != nil:
		out = fmt.Sprintf("every %d %s", s.CalendarInterval.Interval, s.CalendarInterval.Unit)
	case s.DailyInterval != nil:
		d := s.DailyInterval
		out = fmt.Sprintf("%s-%s every %d %s", d.From, d.To, d.Interval, d.Unit)
		if d.Days != "" {
			out += " " + d.Days
		}
	default:
		return ""
	}
	if s.TimeZone != "" && s.TimeZone != "UTC" {
		out += " (" + s.TimeZone + ")"
	}
	return out
}

// Times returns the trigger's start and end (zero when not given).
func (t *TriggerRequest) Times() (start, end time.Time, err error) {
	if start, err = ParseTime("start", t.Start); err != nil {
		return start, end, err
	}
	end, err = ParseTime("end", t.End)
	return start, end, err
}

// MisfirePolicy returns the trigger's misfire policy (smart when not given).
func (t *TriggerRequest) MisfirePolicy() (schedule.MisfirePolicy, error) {
	if t.Misfire == "" {
		return schedule.MisfireSmart, nil
	}
	p, err := schedule.ParseMisfirePolicy(t.Misfire)
	if err != nil {
		return p, schedule.Fieldf("misfire", "%v (want smart, ignore, fire_now, do_nothing, reschedule_now_existing, "+
			"reschedule_now_remaining, reschedule_next_remaining or reschedule_next_existing)", err)
	}
	return p, nil
}

// DSTPolicy returns the trigger's DST policy (quartz when not given).
func (t *TriggerRequest) DSTPolicy() (schedule.DSTPolicy, error) {
	p, err := schedule.ParseDSTPolicy(t.DST)
	if err != nil {
		return p, schedule.Fieldf("dst", "%v", err)
	}
	return p, nil
}

// CatchUpPolicy returns the trigger's catch-up window (0: the cluster's misfire threshold)
// and mode.
func (t *TriggerRequest) CatchUpPolicy() (time.Duration, string, error) {
	var window time.Duration
	if t.CatchUpWindow != "" {
		var err error
		if window, err = time.ParseDuration(t.CatchUpWindow); err != nil {
			return 0, "", schedule.Fieldf("catchup_window", "%q is not a duration (want one such as 90s, 15m or 2h)", t.CatchUpWindow)
		}
	}
	return window, t.CatchUp, nil
}

// ParseTime reads an optional RFC 3339 time given in field; "" is the zero time. A bad one
// is a *schedule.FieldError naming field.
func ParseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, schedule.Fieldf(field, "want an RFC 3339 time such as 2024-06-01T09:00:00Z, got %q", v)
	}
	return t, nil
}
