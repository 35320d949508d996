package schedule

//lint:file-ignore ST1005 Check's errors start with the exported field they are about (Unit, Interval), as the other triggers' checks do

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimeOfDay is a wall-clock time of day, to the second.
type TimeOfDay struct{ Hour, Minute, Second int }

// ParseTimeOfDay parses "HH:MM:SS" (24-hour clock; one-digit fields are accepted).
func ParseTimeOfDay(s string) (TimeOfDay, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return TimeOfDay{}, fmt.Errorf("time of day %q: want HH:MM:SS", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] == '+' || p[0] == '-' {
			return TimeOfDay{}, fmt.Errorf("time of day %q: want HH:MM:SS", s)
		}
		v[i] = n
	}
	t := TimeOfDay{v[0], v[1], v[2]}
	return t, t.check()
}

// String formats the time as "HH:MM:SS".
func (t TimeOfDay) String() string {
	return fmt.Sprintf("%02d:%02d:%02d", t.Hour, t.Minute, t.Second)
}

func (t TimeOfDay) check() error {
	switch {
	case t.Hour < 0 || t.Hour > 23:
		return fmt.Errorf("time of day %s: hour must be 0 to 23", t)
	case t.Minute < 0 || t.Minute > 59:
		return fmt.Errorf("time of day %s: minute must be 0 to 59", t)
	case t.Second < 0 || t.Second > 59:
		return fmt.Errorf("time of day %s: second must be 0 to 59", t)
	}
	return nil
}

func (t TimeOfDay) seconds() int { return t.Hour*3600 + t.Minute*60 + t.Second }

// on returns this time of day on the local date of d, resolved as Java resolves a wall time
// (a time in a spring-forward gap moves forward by the gap; one in an overlap takes the
// second pass).
func (t TimeOfDay) on(d time.Time) time.Time {
	y, m, day := d.Date()
	return javaWallTime(d.Location(), y, m, day, t.Hour, t.Minute, t.Second, 0)
}

// QuartzDayOfWeek maps a Quartz (java.util.Calendar) day number, 1 = Sunday … 7 = Saturday,
// to a time.Weekday. Quartz accepts 0 and 8 and then computes fire times that run backwards;
// Sundial rejects them.
func QuartzDayOfWeek(n int) (time.Weekday, error) {
	if n < 1 || n > 7 {
		return 0, fmt.Errorf("day of week %d: want 1 (Sunday) to 7 (Saturday)", n)
	}
	return time.Weekday(n - 1), nil
}

// DailyInterval fires every Interval Units within a daily window, from StartTimeOfDay to
// EndTimeOfDay inclusive, on the given weekdays (Quartz's DailyTimeIntervalTrigger). Each day
// the count restarts at StartTimeOfDay, so "every 72 minutes 08:00–11:00" fires 08:00, 09:12
// and 10:24. Slots are elapsed time from the day's start, so a window across a fall-back
// change fires in both passes of the repeated hour.
type DailyInterval struct {
	StartTimeOfDay, EndTimeOfDay TimeOfDay
	// Days are the weekdays the trigger fires on; empty means every day.
	Days []time.Weekday
	// Interval and Unit (Second, Minute or Hour) separate fires; at most 24 hours.
	Interval int
	Unit     IntervalUnit
	// RepeatCount caps the fires after the first over the trigger's whole life (not per day),
	// or RepeatForever.
	RepeatCount int
	// Location is the zone of the window and the weekdays; nil means UTC.
	Location *time.Location
}

// Kind returns KindDailyInterval.
func (DailyInterval) Kind() Kind { return KindDailyInterval }

func (d DailyInterval) loc() *time.Location {
	if d.Location == nil {
		return time.UTC
	}
	return d.Location
}

func (d DailyInterval) validate(*Trigger) error {
	var errs []error
	if err := d.StartTimeOfDay.check(); err != nil {
		errs = append(errs, fmt.Errorf("StartTimeOfDay: %w", err))
	}
	if err := d.EndTimeOfDay.check(); err != nil {
		errs = append(errs, fmt.Errorf("EndTimeOfDay: %w", err))
	}
	if len(errs) == 0 && d.EndTimeOfDay.seconds() < d.StartTimeOfDay.seconds() {
		errs = append(errs, fmt.Errorf("EndTimeOfDay %s is before StartTimeOfDay %s", d.EndTimeOfDay, d.StartTimeOfDay))
	}
	for _, w := range d.Days {
		if w < time.Sunday || w > time.Saturday {
			errs = append(errs, fmt.Errorf("Days: %d is not a weekday (0 = Sunday … 6 = Saturday)", int(w)))
		}
	}
	switch {
	case d.Unit != Second && d.Unit != Minute && d.Unit != Hour:
		errs = append(errs, fmt.Errorf("Unit %v: must be SECOND, MINUTE or HOUR", d.Unit))
	case d.Interval < 1:
		errs = append(errs, fmt.Errorf("Interval must be at least 1, got %d", d.Interval))
	case int64(d.Interval)*d.Unit.seconds() > 86400:
		errs = append(errs, fmt.Errorf("Interval %d %v exceeds 24 hours", d.Interval, d.Unit))
	}
	if d.RepeatCount < RepeatForever {
		errs = append(errs, fmt.Errorf("RepeatCount %d is negative (use RepeatForever, -1)", d.RepeatCount))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("daily interval schedule: %w", err)
	}
	return nil
}

func (d DailyInterval) updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time) {
	updateAfterMisfireRegular(tr, cal, now)
}

// firstFireTime is Start itself if Start is a slot (Quartz asks for the slot after Start-1s).
func (d DailyInterval) firstFireTime(tr *Trigger) (time.Time, bool) {
	return d.fireTimeAfter(tr, tr.Start.Add(-time.Second))
}

func (d DailyInterval) firesOn(w time.Weekday) bool {
	return len(d.Days) == 0 || slices.Contains(d.Days, w)
}

// fireTimeAfter follows Quartz's DailyTimeIntervalTriggerImpl.getFireTimeAfter, which looks
// for the slot at or after t+1s, with one deliberate difference (see advance).
//
// Like Quartz it checks the trigger's End only against the day it starts searching from
// (advance), not against the slot it then finds in that day's window: when End falls inside
// a window, the slot after End still fires, once. That fire is always on End's local date and
// within its window, which is where Quartz's own getFinalFireTime puts the trigger's last
// fire (End raised to that day's end of window); the search after it starts past End and
// finds nothing. Sundial keeps this so that every trigger Quartz accepts is accepted and fires
// as it did (schedule/testdata/divergences.txt gives the reasoning).
func (d DailyInterval) fireTimeAfter(tr *Trigger, t time.Time) (time.Time, bool) {
	if d.RepeatCount != RepeatForever && tr.TimesTriggered > d.RepeatCount {
		return time.Time{}, false
	}
	t = t.Add(time.Second).In(d.loc())
	if t.Before(tr.Start) {
		t = tr.Start.In(d.loc())
	}
	fire, ok := d.advance(tr, t, t.After(d.EndTimeOfDay.on(t)))
	if !ok {
		return time.Time{}, false
	}
	dayEnd := d.EndTimeOfDay.on(fire)
	dayStart := d.StartTimeOfDay.on(fire)
	if fire.Before(dayStart) {
		return dayStart, true
	}

	// Slots are counted in whole seconds of elapsed time from the day's start.
	span := int64(d.Interval) * d.Unit.seconds()
	secs := fire.Sub(dayStart).Milliseconds() / 1000
	jumps := (secs + span - 1) / span
	fire = dayStart.Add(time.Duration(jumps*span) * time.Second)
	if fire.After(dayEnd) {
		fire, ok = d.advance(tr, fire, javaSameDay(fire, dayEnd))
		if !ok {
			return time.Time{}, false
		}
		fire = d.StartTimeOfDay.on(fire)
	}
	return fire, true
}

// advance moves t to the start of the window on the next allowed day when force is set or t's
// day is not allowed; otherwise it returns t. It fails when the result is past the trigger's
// end: the only place the trigger's End is checked.
//
// Quartz steps from the current day's window start with Calendar.add(DATE, 1), which carries
// a start that a spring-forward gap had pushed forward (02:00 → 03:00) into the next day, so
// that day loses its slots before 03:00. Sundial instead resolves the window start afresh on
// the new day and fires every slot that exists on the local clock.
func (d DailyInterval) advance(tr *Trigger, t time.Time, force bool) (time.Time, bool) {
	if force || !d.firesOn(t.Weekday()) {
		y, m, day := t.Date()
		for i := 1; i <= 7; i++ {
			date := time.Date(y, m, day+i, 12, 0, 0, 0, t.Location())
			if d.firesOn(date.Weekday()) {
				t = d.StartTimeOfDay.on(date)
				break
			}
		}
	}
	if !tr.End.IsZero() && t.After(tr.End) {
		return time.Time{}, false
	}
	return t, true
}
