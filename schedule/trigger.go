package schedule

import (
	"errors"
	"time"
)

// Schedule is the kind-specific part of a trigger: cron, simple, calendar interval or daily
// time interval. The set of kinds is closed; the engine persists them through Spec.
type Schedule interface {
	// Kind names the schedule kind as it is stored ("cron", "simple", ...).
	Kind() Kind

	// firstFireTime returns tr's first fire time, ignoring calendars (the first step of
	// Quartz's computeFirstFireTime, which differs by kind).
	firstFireTime(tr *Trigger) (first time.Time, ok bool)
	// fireTimeAfter returns the first time strictly after t at which tr fires, ignoring
	// calendars (Quartz's getFireTimeAfter). ok is false when the trigger never fires again.
	fireTimeAfter(tr *Trigger, t time.Time) (next time.Time, ok bool)
	// validate reports what is wrong with tr for this kind (Quartz's validate()).
	validate(tr *Trigger) error
	// updateAfterMisfire applies tr.Misfire after a missed fire, with the clock at now.
	updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time)
}

// Kind names a schedule kind.
type Kind string

// The schedule kinds.
const (
	KindCron             Kind = "cron"
	KindSimple           Kind = "simple"
	KindCalendarInterval Kind = "calendar_interval"
	KindDailyInterval    Kind = "daily_interval"
)

// Calendar excludes instants from a trigger's schedule (Quartz's org.quartz.Calendar).
// A trigger steps past every fire time its calendar does not include.
type Calendar interface {
	// Includes reports whether a trigger may fire at t.
	Includes(t time.Time) bool
}

// horizonYears bounds every search for a fire time: a trigger whose calendar excludes every
// candidate for this many years after the search began has no further fire time. Quartz uses
// "the current year + 100"; counting from the search start keeps the package free of clock
// reads and gives the same answer for every schedule that fires within a century.
const horizonYears = 100

// Trigger is a schedule together with the state Quartz keeps in a trigger object: the start
// and end of its life, its misfire instruction, and what it has fired so far. The engine
// stores these fields as columns and rebuilds a Trigger to advance it.
type Trigger struct {
	Schedule Schedule
	// Start is the first instant the trigger may fire (inclusive; a cron trigger drops the
	// milliseconds, so it may fire in Start's second).
	Start time.Time
	// End ends the trigger's life; the zero Time means no end. No fire is searched for from
	// past End, so every kind stops at End, with Quartz's two exceptions: a daily-interval
	// trigger whose End falls inside a window fires once more, at the window's next slot, and
	// a fire_now misfire fires now even past End.
	End time.Time
	// Misfire is the instruction applied by UpdateAfterMisfire; the zero value is
	// MisfireSmart, Quartz's default.
	Misfire MisfirePolicy

	// Next is the pending fire time; the zero Time means the trigger will not fire again.
	Next time.Time
	// Prev is the last fire time; zero before the first fire.
	Prev time.Time
	// TimesTriggered counts the fires so far (SimpleTrigger's and DailyTimeIntervalTrigger's
	// repeat counts are measured against it).
	TimesTriggered int
}

// ErrNeverFires is returned by ComputeFirst when the trigger has no fire time at all.
var ErrNeverFires = errors.New("based on the configured schedule, the trigger will never fire")

// Validate reports what is wrong with the trigger's configuration, as a *FieldError naming
// schedule, start, end or misfire.
func (tr *Trigger) Validate() error {
	if tr.Schedule == nil {
		return Fieldf("schedule", "trigger has no schedule")
	}
	if tr.Start.IsZero() {
		return Fieldf("start", "trigger has no start time")
	}
	if !tr.End.IsZero() && tr.End.Before(tr.Start) {
		return Fieldf("end", "end time %s is before start time %s", tr.End.Format(time.RFC3339Nano), tr.Start.Format(time.RFC3339Nano))
	}
	if err := tr.Misfire.validFor(tr.Schedule.Kind()); err != nil {
		return &FieldError{Field: "misfire", Err: err}
	}
	if err := tr.Schedule.validate(tr); err != nil {
		return &FieldError{Field: "schedule", Err: err}
	}
	return nil
}

// FireTimeAfter returns the first time strictly after t at which the trigger fires, ignoring
// calendars. ok is false when there is none.
func (tr *Trigger) FireTimeAfter(t time.Time) (time.Time, bool) {
	return tr.Schedule.fireTimeAfter(tr, t)
}

// ComputeFirst sets Next to the first fire time that cal includes (Quartz's
// computeFirstFireTime) and returns it. It returns ErrNeverFires, and leaves Next zero, when
// there is none within the search horizon.
func (tr *Trigger) ComputeFirst(cal Calendar) (time.Time, error) {
	next, ok := tr.Schedule.firstFireTime(tr)
	if ok {
		next, ok = tr.skipExcluded(cal, next, tr.Start)
	}
	if !ok {
		tr.Next = time.Time{}
		return time.Time{}, ErrNeverFires
	}
	tr.Next = next
	return next, nil
}

// Triggered records that the pending fire happened and advances Next to the following fire
// time that cal includes (Quartz's triggered(cal)). Next becomes zero when the trigger is
// complete.
func (tr *Trigger) Triggered(cal Calendar) {
	tr.TimesTriggered++
	tr.Prev = tr.Next
	if tr.Next.IsZero() {
		return
	}
	tr.Next = tr.nextIncluded(cal, tr.Next)
}

// UpdateAfterMisfire applies the trigger's misfire instruction with the clock at now
// (Quartz's updateAfterMisfire). Like Quartz it does not check that the trigger really is
// late; the engine decides that with Misfired.
func (tr *Trigger) UpdateAfterMisfire(cal Calendar, now time.Time) {
	if tr.Misfire == MisfireIgnore {
		return
	}
	tr.Schedule.updateAfterMisfire(tr, cal, now)
}

// Misfired reports whether the pending fire is late by more than threshold at now, which is
// when a job store applies the misfire instruction. Triggers with MisfireIgnore never misfire.
func (tr *Trigger) Misfired(now time.Time, threshold time.Duration) bool {
	if tr.Misfire == MisfireIgnore || tr.Next.IsZero() {
		return false
	}
	return tr.Next.Before(now.Add(-threshold))
}

// nextIncluded returns the first fire time after t that cal includes, or the zero Time.
func (tr *Trigger) nextIncluded(cal Calendar, t time.Time) time.Time {
	next, ok := tr.Schedule.fireTimeAfter(tr, t)
	if ok {
		next, ok = tr.skipExcluded(cal, next, t)
	}
	if !ok {
		return time.Time{}
	}
	return next
}

// skipExcluded steps from candidate past every time cal excludes. It gives up, returning
// false, when the trigger ends or the candidates pass the horizon counted from searchStart.
//
// Where the calendar can bound the end of an exclusion, the search jumps to the first fire
// time at or after the bound instead of testing every fire time before it: those are all
// excluded, so it finds what stepping would. Asking for a bound costs more than a step and is
// wasted on exclusions shorter than the gap between fire times (an hourly trigger under a
// calendar that excludes the first minutes of every hour), so after each wasted ask the
// search steps twice as long before asking again.
func (tr *Trigger) skipExcluded(cal Calendar, candidate, searchStart time.Time) (time.Time, bool) {
	if cal == nil {
		return candidate, true
	}
	limit := searchStart.Year() + horizonYears
	jump := tr.jumpable()
	skip, wait := 0, 1 // steps before the next ask, and before the one after if it is wasted
	for !cal.Includes(candidate) {
		next, ok := tr.Schedule.fireTimeAfter(tr, candidate)
		if skip > 0 {
			skip--
		} else {
			bound, includes := calEarliestIncluded(cal, candidate)
			if !includes {
				return time.Time{}, false // stepping would reach the horizon or the trigger's end
			}
			if jump && ok && bound.After(next) {
				// fireTimeAfter is strict, and bound may itself be a fire time.
				next, ok = tr.Schedule.fireTimeAfter(tr, bound.Add(-time.Nanosecond))
				wait = 1
			} else {
				skip, wait = wait, 2*wait
			}
		}
		if !ok || next.Year() > limit {
			return time.Time{}, false
		}
		candidate = next
	}
	return candidate, true
}

// jumpable reports whether the fire time the schedule gives after any instant is the first,
// after that instant, of one fixed sequence, which is what lets skipExcluded jump. A calendar
// interval of days or more in a zone with DST changes fails this: Quartz leaps from the start
// by a distance that depends on the instant, and one long leap keeps a wall time that
// day-by-day steps through a DST gap would have moved.
func (tr *Trigger) jumpable() bool {
	var ci CalendarInterval
	switch s := tr.Schedule.(type) {
	case CalendarInterval:
		ci = s
	case *CalendarInterval:
		ci = *s
	default:
		return true
	}
	if ci.Unit.seconds() != 0 {
		return true
	}
	_, change := tr.Start.In(ci.loc()).ZoneBounds()
	return change.IsZero()
}

// SkipExcluded moves Next past the times cal excludes. A job store calls it when a trigger's
// calendar may have changed since Next was computed, so a newly excluded time never fires.
func (tr *Trigger) SkipExcluded(cal Calendar) {
	if cal == nil || tr.Next.IsZero() || cal.Includes(tr.Next) {
		return
	}
	next, ok := tr.skipExcluded(cal, tr.Next, tr.Next)
	if !ok {
		next = time.Time{}
	}
	tr.Next = next
}
