package schedule

import (
	"time"
)

// RepeatForever is the repeat count of a trigger that repeats until its end time.
const RepeatForever = -1

// Simple fires at the trigger's start and then every Interval, RepeatCount more times (Quartz's
// SimpleTrigger). The zero value, Simple{}, is a one-shot trigger: it fires once, at Start.
//
// The schedule is pure elapsed time: it ignores time zones, so its wall-clock time shifts
// across a DST change.
type Simple struct {
	// Interval separates consecutive fires. It must be at least a millisecond unless the
	// trigger fires only once.
	Interval time.Duration
	// RepeatCount is the number of fires after the first, or RepeatForever. Some misfire
	// policies rewrite it (as Quartz does), replacing the trigger's Schedule.
	RepeatCount int
}

// Kind returns KindSimple.
func (Simple) Kind() Kind { return KindSimple }

func (s Simple) validate(*Trigger) error { return s.Check() }

// Check is the rule of a simple schedule, for the callers that build one (the API, the CLI)
// to report before there is a trigger: a *FieldError naming RepeatCount or Interval.
func (s Simple) Check() error {
	switch {
	case s.RepeatCount < RepeatForever:
		return Fieldf("RepeatCount", "want -1 (forever) or a count of repeats, got %d", s.RepeatCount)
	case s.Interval < 0:
		return Fieldf("Interval", "want no negative interval, got %v", s.Interval)
	case s.RepeatCount != 0 && s.Interval < time.Millisecond:
		return Fieldf("Interval", "want at least 1 ms for a schedule that repeats, got %v", s.Interval)
	}
	return nil
}

func (Simple) firstFireTime(tr *Trigger) (time.Time, bool) { return tr.Start, true }

// fireTimeAfter counts slots from Start; the count is bounded by the fires the trigger has
// left, so a trigger that has fired RepeatCount+1 times is done whatever t is.
func (s Simple) fireTimeAfter(tr *Trigger, t time.Time) (time.Time, bool) {
	finite := s.RepeatCount != RepeatForever
	if finite && tr.TimesTriggered > s.RepeatCount {
		return time.Time{}, false
	}
	if s.RepeatCount == 0 && !t.Before(tr.Start) {
		return time.Time{}, false
	}
	if !tr.End.IsZero() && !tr.End.After(t) {
		return time.Time{}, false
	}
	if t.Before(tr.Start) {
		return tr.Start, true
	}
	if s.Interval <= 0 { // only an unvalidated schedule gets here
		return time.Time{}, false
	}
	n := int64(t.Sub(tr.Start)/s.Interval) + 1
	if finite && n > int64(s.RepeatCount) {
		return time.Time{}, false
	}
	next := tr.Start.Add(time.Duration(n) * s.Interval)
	if !tr.End.IsZero() && !tr.End.After(next) {
		return time.Time{}, false
	}
	return next, true
}

// slotsBetween is the number of whole intervals from a to b (Quartz's
// computeNumTimesFiredBetween), truncated toward zero.
func (s Simple) slotsBetween(a, b time.Time) int {
	if s.Interval < time.Millisecond || a.IsZero() {
		return 0
	}
	return int(b.Sub(a) / s.Interval)
}

// updateAfterMisfire follows Quartz's SimpleTriggerImpl: the "now" policies restart the whole
// schedule at now (new phase, counts rebased so that timesTriggered is 0), the "next" policies
// keep the original grid.
func (s Simple) updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time) {
	p := tr.Misfire
	switch {
	case p == MisfireSmart && s.RepeatCount == 0:
		p = MisfireFireNow
	case p == MisfireSmart && s.RepeatCount == RepeatForever:
		p = MisfireRescheduleNextRemaining
	case p == MisfireSmart:
		p = MisfireRescheduleNowExisting
	case p == MisfireFireNow && s.RepeatCount != 0:
		p = MisfireRescheduleNowRemaining
	}
	counted := s.RepeatCount != 0 && s.RepeatCount != RepeatForever

	switch p {
	case MisfireFireNow:
		// Fires even past the end time and on a day the calendar excludes, as Quartz does.
		tr.Next = now
	case MisfireRescheduleNextExisting:
		tr.Next = tr.nextIncluded(cal, now)
	case MisfireRescheduleNextRemaining:
		next := tr.nextIncluded(cal, now)
		if !next.IsZero() {
			// Quartz counts the skipped slots, calendar-excluded ones included.
			tr.TimesTriggered += s.slotsBetween(tr.Next, next)
		}
		tr.Next = next
	case MisfireRescheduleNowExisting, MisfireRescheduleNowRemaining:
		if counted {
			left := s.RepeatCount - tr.TimesTriggered
			if p == MisfireRescheduleNowRemaining {
				left -= s.slotsBetween(tr.Next, now)
				left = max(left, 0)
			}
			s.RepeatCount = left
			tr.TimesTriggered = 0
			tr.Schedule = s
		}
		if !tr.End.IsZero() && tr.End.Before(now) {
			tr.Next = time.Time{}
			return
		}
		tr.Start = now
		tr.Next = now
	}
}
