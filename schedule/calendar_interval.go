package schedule

import (
	"fmt"
	"strings"
	"time"
)

// IntervalUnit is the unit of a calendar-interval or daily-interval schedule (Quartz's
// DateBuilder.IntervalUnit without MILLISECOND, which Quartz's triggers do not handle).
type IntervalUnit int

// The interval units. The zero value is not a unit, so a forgotten Unit fails validation.
const (
	Second IntervalUnit = iota + 1
	Minute
	Hour
	Day
	Week
	Month
	Year
)

var intervalUnitNames = [...]string{
	Second: "SECOND",
	Minute: "MINUTE",
	Hour:   "HOUR",
	Day:    "DAY",
	Week:   "WEEK",
	Month:  "MONTH",
	Year:   "YEAR",
}

// String returns the unit's Quartz name, such as "DAY".
func (u IntervalUnit) String() string {
	if u < Second || u > Year {
		return fmt.Sprintf("IntervalUnit(%d)", int(u))
	}
	return intervalUnitNames[u]
}

// ParseIntervalUnit parses a unit's Quartz name, ignoring case ("DAY", "day").
func ParseIntervalUnit(s string) (IntervalUnit, error) {
	for u := Second; u <= Year; u++ {
		if strings.EqualFold(s, intervalUnitNames[u]) {
			return u, nil
		}
	}
	return 0, fmt.Errorf("unknown interval unit %q (want SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR)", s)
}

// seconds returns the length of a fixed-length unit in seconds, or 0 for Day and longer.
func (u IntervalUnit) seconds() int64 {
	switch u {
	case Second:
		return 1
	case Minute:
		return 60
	case Hour:
		return 3600
	}
	return 0
}

// CalendarInterval fires at the trigger's start and then every Interval Units on the local
// calendar of Location (Quartz's CalendarIntervalTrigger). It has no repeat count; it ends at
// the trigger's end time.
//
// Seconds, minutes and hours are elapsed time. Days and weeks keep the wall-clock time, but a
// day that lacks that time (spring forward) moves it back by the gap for good, unless
// PreserveHourOfDay. Months and years accumulate: from January 31 the trigger fires on
// February 29, then March 29, April 29 and so on, as Quartz does.
type CalendarInterval struct {
	Interval int
	Unit     IntervalUnit
	// Location is the zone whose calendar the interval is counted in; nil means UTC.
	Location *time.Location
	// PreserveHourOfDay keeps the start's hour of day across DST changes for Day and longer
	// units. If that hour does not exist on a day, the fire moves forward by the gap.
	PreserveHourOfDay bool
	// SkipDayIfHourDoesNotExist skips, instead of moving, a fire whose hour of day does not
	// exist (only with PreserveHourOfDay). A 30-minute gap leaves the hour existing, so
	// nothing is skipped there.
	SkipDayIfHourDoesNotExist bool
}

// Kind returns KindCalendarInterval.
func (CalendarInterval) Kind() Kind { return KindCalendarInterval }

func (c CalendarInterval) loc() *time.Location {
	if c.Location == nil {
		return time.UTC
	}
	return c.Location
}

func (c CalendarInterval) validate(*Trigger) error {
	if c.Interval < 1 {
		return fmt.Errorf("calendar interval schedule: Interval must be at least 1, got %d", c.Interval)
	}
	if c.Unit < Second || c.Unit > Year {
		return fmt.Errorf("calendar interval schedule: Unit %v is not SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR", c.Unit)
	}
	return nil
}

func (CalendarInterval) firstFireTime(tr *Trigger) (time.Time, bool) { return tr.Start, true }

func (c CalendarInterval) updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time) {
	updateAfterMisfireRegular(tr, cal, now)
}

// fireTimeAfter recomputes from Start every time, stepping a calendar the way Quartz's
// java.util.Calendar does, so the same start always gives the same grid (including its drift
// through DST gaps and month-end clamps).
func (c CalendarInterval) fireTimeAfter(tr *Trigger, after time.Time) (time.Time, bool) {
	if !tr.End.IsZero() && !tr.End.After(after) {
		return time.Time{}, false
	}
	if after.Before(tr.Start) {
		return tr.Start, true
	}
	next, ok := c.step(tr.Start.In(c.loc()), after)
	if !ok || (!tr.End.IsZero() && !tr.End.After(next)) {
		return time.Time{}, false
	}
	return next, true
}

// step returns the first grid time after after (which is not before start).
func (c CalendarInterval) step(start, after time.Time) (time.Time, bool) {
	interval := int64(c.Interval)
	// Quartz counts whole seconds past start, plus one, so "after" lands strictly inside.
	secondsAfterStart := 1 + after.Sub(start).Milliseconds()/1000
	if unit := c.Unit.seconds(); unit != 0 {
		span := interval * unit
		jumps := (secondsAfterStart + span - 1) / span
		return start.Add(time.Duration(jumps*span) * time.Second), true
	}

	var add func(t time.Time) time.Time
	switch c.Unit {
	case Day, Week:
		days := c.Interval
		if c.Unit == Week {
			days *= 7
		}
		add = func(t time.Time) time.Time { return javaAddDays(t, days) }
	case Month:
		add = func(t time.Time) time.Time { return javaAddMonths(t, c.Interval) }
	case Year:
		add = func(t time.Time) time.Time { return javaAddMonths(t, 12*c.Interval) }
	default:
		return time.Time{}, false
	}

	t := start
	if c.Unit == Day || c.Unit == Week {
		// Quartz leaps most of the way in one add. One add across a DST change keeps the wall
		// time where day-by-day stepping would drift, so the leap is part of the answer.
		span := interval * 86400
		if c.Unit == Week {
			span *= 7
		}
		if jumps := secondsAfterStart / span; jumps > 20 {
			switch {
			case jumps < 50:
				jumps = int64(float64(jumps) * 0.80)
			case jumps < 500:
				jumps = int64(float64(jumps) * 0.90)
			default:
				jumps = int64(float64(jumps) * 0.95)
			}
			t = javaAddDays(t, int(jumps*span/86400))
		}
	}

	limit := after.Year() + horizonYears
	initialHour := start.Hour()
	for !t.After(after) {
		if t.Year() > limit {
			return time.Time{}, false
		}
		t = add(t)
	}
	for {
		var again bool
		t, again = c.preserveHour(t, initialHour, after)
		if !again {
			return t, true
		}
		if t.Year() > limit {
			return time.Time{}, false
		}
		t = add(t)
	}
}

// preserveHour puts t back on the start's hour of day when PreserveHourOfDay is set and
// reports whether the result still has to advance another interval: it is not after after,
// or the hour does not exist that day and SkipDayIfHourDoesNotExist is set. The moved time
// stays the base for later intervals, as in Quartz.
func (c CalendarInterval) preserveHour(t time.Time, initialHour int, after time.Time) (time.Time, bool) {
	if !c.PreserveHourOfDay || t.Hour() == initialHour {
		return t, false
	}
	t = javaSetHour(t, initialHour)
	if t.Hour() != initialHour {
		return t, c.SkipDayIfHourDoesNotExist
	}
	return t, !t.After(after)
}
