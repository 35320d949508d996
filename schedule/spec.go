package schedule

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// specJSON is the stored form of a schedule: a trigger row keeps its kind, this JSON and its
// time zone in separate columns, so the zone is not repeated here.
type specJSON struct {
	Expr        string `json:"expr,omitempty"`         // cron
	IntervalMs  int64  `json:"interval_ms,omitempty"`  // simple
	RepeatCount *int   `json:"repeat_count,omitempty"` // simple, daily_interval
	Interval    int    `json:"interval,omitempty"`     // calendar_interval, daily_interval
	Unit        string `json:"unit,omitempty"`         // calendar_interval, daily_interval
	Preserve    bool   `json:"preserve_hour,omitempty"`
	SkipDay     bool   `json:"skip_day,omitempty"`
	From        string `json:"from,omitempty"` // daily_interval window, HH:MM:SS
	To          string `json:"to,omitempty"`
	Days        string `json:"days,omitempty"` // daily_interval, e.g. "MON,TUE"; empty: every day
}

// EncodeSpec returns the stored form of s. Equal schedules encode to equal strings, so a
// caller can tell whether a misfire instruction rewrote a schedule.
func EncodeSpec(s Schedule) string {
	var j specJSON
	switch s := unwrapDST(s).(type) {
	case *Cron:
		j.Expr = s.String()
	case Simple:
		j.IntervalMs, j.RepeatCount = s.Interval.Milliseconds(), &s.RepeatCount
	case CalendarInterval:
		j.Interval, j.Unit, j.Preserve, j.SkipDay = s.Interval, s.Unit.String(), s.PreserveHourOfDay, s.SkipDayIfHourDoesNotExist
	case DailyInterval:
		j.Interval, j.Unit, j.RepeatCount = s.Interval, s.Unit.String(), &s.RepeatCount
		j.From, j.To = s.StartTimeOfDay.String(), s.EndTimeOfDay.String()
		days := make([]string, len(s.Days))
		for i, d := range s.Days {
			days[i] = strings.ToUpper(d.String()[:3])
		}
		j.Days = strings.Join(days, ",")
	}
	b, _ := json.Marshal(j) // cannot fail: plain strings and numbers
	return string(b)
}

// DecodeSpec rebuilds a schedule of the given kind from its stored form, in loc.
func DecodeSpec(kind Kind, spec string, loc *time.Location) (Schedule, error) {
	var j specJSON
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%s spec %q: %w", kind, spec, err)
	}
	repeat := RepeatForever
	if j.RepeatCount != nil {
		repeat = *j.RepeatCount
	}
	switch kind {
	case KindCron:
		return ParseCron(j.Expr, loc)
	case KindSimple:
		return Simple{Interval: time.Duration(j.IntervalMs) * time.Millisecond, RepeatCount: repeat}, nil
	case KindCalendarInterval:
		unit, err := ParseIntervalUnit(j.Unit)
		if err != nil {
			return nil, err
		}
		return CalendarInterval{Interval: j.Interval, Unit: unit, Location: loc,
			PreserveHourOfDay: j.Preserve, SkipDayIfHourDoesNotExist: j.SkipDay}, nil
	case KindDailyInterval:
		unit, err := ParseIntervalUnit(j.Unit)
		if err != nil {
			return nil, err
		}
		from, err := ParseTimeOfDay(j.From)
		if err != nil {
			return nil, err
		}
		to, err := ParseTimeOfDay(j.To)
		if err != nil {
			return nil, err
		}
		days, err := ParseDays(j.Days)
		if err != nil {
			return nil, err
		}
		return DailyInterval{StartTimeOfDay: from, EndTimeOfDay: to, Days: days, Interval: j.Interval,
			Unit: unit, RepeatCount: repeat, Location: loc}, nil
	}
	return nil, fmt.Errorf("unknown schedule kind %q", kind)
}

// ParseDays reads a list of day names and ranges in any case, such as "MON-FRI" or
// "mon,wed,fri" or "SAT-MON"; "" means every day and returns nil.
func ParseDays(s string) ([]time.Weekday, error) {
	if s == "" {
		return nil, nil
	}
	var days []time.Weekday
	for _, part := range strings.Split(strings.ToUpper(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, ok1 := weekdayByName[lo]
		last, ok2 := first, true
		if isRange {
			last, ok2 = weekdayByName[hi]
		}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("days %q: %q is not a day name (SUN … SAT) or a range of them (MON-FRI)", s, part)
		}
		for d := first; ; d = (d + 1) % 7 {
			days = append(days, d)
			if d == last {
				break
			}
		}
	}
	return days, nil
}

var weekdayByName = map[string]time.Weekday{"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday,
	"WED": time.Wednesday, "THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday}

// LocationOf returns the time zone a schedule computes in, or nil for a simple schedule,
// which counts elapsed time and has none.
func LocationOf(s Schedule) *time.Location {
	switch s := unwrapDST(s).(type) {
	case *Cron:
		return s.Location()
	case CalendarInterval:
		return orUTC(s.Location)
	case DailyInterval:
		return orUTC(s.Location)
	}
	return nil
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}
