package schedule

import "time"

// Interval is a run's data interval: the span of scheduled time the run covers. End is the
// run's scheduled time, or for a coalesced catch-up the last missed one; Start the scheduled
// time before the first time covered.
type Interval struct {
	Start, End time.Time
}

// IntervalStart is where the data interval of the trigger's pending fire starts: the time it
// fired before (Prev), so consecutive runs' intervals tile the timeline and a run after
// fires a misfire policy skipped covers the skipped span too. The first fire's interval
// starts at the trigger's start time (never after the fire itself).
func (tr *Trigger) IntervalStart() time.Time {
	if !tr.Prev.IsZero() {
		return tr.Prev
	}
	if tr.Start.After(tr.Next) {
		return tr.Next
	}
	return tr.Start
}

// maxCoalesced bounds the fires one coalesced catch-up steps over, so a trigger that fires
// every millisecond and missed years cannot hold an acquisition round: past it the
// remaining missed fires are left for the next round, which coalesces them again.
const maxCoalesced = 1_000_000

// Coalesce is the coalesced catch-up of a trigger whose pending fire is late by more than
// window at now: every fire time at or before now is stepped over as fired, and the one
// interval they cover is returned, for a single run now. The trigger's misfire policy plays
// no part. ok is false, and the trigger unchanged, when it is not that late.
func (tr *Trigger) Coalesce(cal Calendar, now time.Time, window time.Duration) (iv Interval, ok bool) {
	if tr.Next.IsZero() || !tr.Next.Before(now.Add(-window)) {
		return Interval{}, false
	}
	iv.Start = tr.IntervalStart()
	for i := 0; i < maxCoalesced && !tr.Next.IsZero() && !tr.Next.After(now); i++ {
		iv.End = tr.Next
		tr.Triggered(cal)
	}
	return iv, true
}

// FireTimesIn lists the times the trigger's schedule and calendar give in [from, to] (its
// state playing no part: every time from its start counts), at most max of them, and the
// included fire time before from (zero when there is none). A backfill runs these times.
//
// A cron or daily-interval schedule is not anchored to the trigger's start, so for them the
// range may reach back before the start (a trigger made today backfills last month), and the
// time before is searched up to a year back. Simple and calendar-interval schedules count
// from their start, and have no times before it.
func (tr *Trigger) FireTimesIn(cal Calendar, from, to time.Time, max int) (times []time.Time, before time.Time) {
	c := *tr
	c.TimesTriggered, c.Prev = 0, time.Time{}
	if k := c.Schedule.Kind(); k == KindCron || k == KindDailyInterval {
		if floor := from.AddDate(-1, 0, 0); floor.Before(c.Start) {
			c.Start = floor
		}
	}
	before = c.lastBefore(cal, from)
	for t := from.Add(-time.Nanosecond); len(times) < max; {
		next := c.nextIncluded(cal, t)
		if next.IsZero() || next.After(to) {
			break
		}
		times = append(times, next)
		t = next
	}
	return times, before
}

// lastBefore finds the last included fire time strictly before t, searching back from t in
// windows that double until one holds a fire time or reaches the trigger's start.
func (tr *Trigger) lastBefore(cal Calendar, t time.Time) time.Time {
	if !tr.Start.Before(t) {
		return time.Time{}
	}
	for span := time.Minute; ; span *= 2 {
		from := t.Add(-span)
		if from.Before(tr.Start) {
			from = tr.Start
		}
		var last time.Time
		for cur := from.Add(-time.Nanosecond); ; {
			next := tr.nextIncluded(cal, cur)
			if next.IsZero() || !next.Before(t) {
				break
			}
			last, cur = next, next
		}
		if !last.IsZero() || !from.After(tr.Start) {
			return last
		}
	}
}
