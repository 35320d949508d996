package schedule

import "time"

// A trigger whose calendar excludes a long stretch would otherwise test every fire time in
// it, one by one: a calendar that excludes the whole year costs a 1-second trigger 31 million
// tests. Calendars that can tell where their exclusion ends let the trigger jump there.

// calBounder is a calendar that can bound the end of its own exclusions.
type calBounder interface {
	// earliestIncluded returns a lower bound on the first instant at or after t that the
	// calendar itself, without its Base, includes: t when it includes t. ok is false when
	// it includes no instant at all.
	earliestIncluded(t time.Time) (bound time.Time, ok bool)
}

// calMaxRounds caps the passes calEarliestIncluded makes over a chain. Members whose
// exclusions together cover everything, though none does alone, would otherwise pass the
// bound back and forth forever; the bound reached is still a lower bound, and the caller
// gives up at its horizon.
const calMaxRounds = 64

// calEarliestIncluded returns a lower bound on the first instant at or after t that the
// calendar chain cal includes; ok is false when it includes none. A member that cannot bound
// its exclusions, or a calendar of another package whose Base is unknown, only makes the
// bound less tight: the chain includes an instant only if every member does.
func calEarliestIncluded(cal Calendar, t time.Time) (time.Time, bool) {
	for range calMaxRounds {
		stable := true
		for c := cal; c != nil; {
			if b, ok := c.(calBounder); ok {
				bound, ok := b.earliestIncluded(t)
				if !ok {
					return time.Time{}, false
				}
				if bound.After(t) {
					t, stable = bound, false
				}
			}
			l, ok := c.(calLinker)
			if !ok {
				break
			}
			c = l.base()
		}
		if stable {
			break
		}
	}
	return t, true
}

// calMaxSkipDays caps the days calSkipDays tests in one call, so that a calendar including
// a single day in years (February 29) answers in bounded time; the caller asks again.
const calMaxSkipDays = 400

// calSkipDays returns t if excluded does not hold for t's local date in loc, and otherwise
// the start of the first later date for which it does not. excluded is given the date as
// midnight UTC.
func calSkipDays(t time.Time, loc *time.Location, excluded func(date time.Time) bool) time.Time {
	y, m, d := t.In(loc).Date()
	date := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if !excluded(date) {
		return t
	}
	for range calMaxSkipDays {
		date = date.AddDate(0, 0, 1)
		if !excluded(date) {
			break
		}
	}
	// If the cap was hit, date is still excluded; its start is a lower bound all the same.
	return calDayStart(date, loc)
}

// calDayStart returns the first instant whose local date in loc is date (given as midnight
// UTC) or later. That is usually time.Date's midnight, but a DST change at midnight can skip
// it (the day starts at the change) or repeat it (the day starts at the first pass, while
// time.Date may pick the second), so the zone's periods are walked instead.
func calDayStart(date time.Time, loc *time.Location) time.Time {
	midnight := date.Unix() // the local midnight read as if it were UTC
	// Two days earlier it is the previous date in every zone.
	t := time.Unix(midnight-2*86400, 0).In(loc)
	for {
		_, off := t.Zone()
		start := midnight - int64(off)
		if start < t.Unix() {
			return t // this period begins (at a DST change) already past midnight
		}
		end := calZoneEnd(t)
		if end.IsZero() || start < end.Unix() {
			return time.Unix(start, 0).In(loc)
		}
		t = end
	}
}

// calZoneEnd returns the end of t's zone period, after which the offset may change, or the
// zero Time if it never does. Past its zone table Go's ZoneBounds takes every year to have
// 365 days, so on December 31 of a leap year it reports an end that is not after t; the
// period really runs into the next year.
func calZoneEnd(t time.Time) time.Time {
	_, end := t.ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		end = time.Date(t.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).In(t.Location())
	}
	return end
}

func (c *HolidayCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	return calSkipDays(t, calLocation(c.Location), func(date time.Time) bool {
		return c.days[calDay{date.Year(), date.Month(), date.Day()}]
	}), true
}

func (c *WeeklyCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	if c.Excluded == [7]bool{true, true, true, true, true, true, true} {
		return time.Time{}, false
	}
	return calSkipDays(t, calLocation(c.Location), func(date time.Time) bool {
		return c.Excluded[date.Weekday()]
	}), true
}

func (c *MonthlyCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	if c.excluded == 0xFFFFFFFE { // days 1 to 31
		return time.Time{}, false
	}
	return calSkipDays(t, calLocation(c.Location), func(date time.Time) bool {
		return c.IsDayExcluded(date.Day())
	}), true
}

func (c *AnnualCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	if len(c.days) == 366 { // AddDay admits only real days, so this is all of them
		return time.Time{}, false
	}
	return calSkipDays(t, calLocation(c.Location), func(date time.Time) bool {
		return c.days[MonthDay{date.Month(), date.Day()}]
	}), true
}

// earliestIncluded reads the range ends exactly as Includes does, so the bound is the first
// instant Includes accepts when that falls on t's date.
func (c *DailyCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	loc := calLocation(c.Location)
	y, m, d := t.In(loc).Date()
	from, to := c.From.on(y, m, d, loc), c.To.on(y, m, d, loc)
	if c.Invert {
		switch {
		case t.Before(from):
			return from, true
		case !t.After(to):
			return t, true
		}
		return c.From.on(y, m, d+1, loc), true
	}
	if t.Before(from) || t.After(to) {
		return t, true
	}
	if c.From.millis() == 0 && c.To.millis() == 86_399_999 {
		return time.Time{}, false // the range is the whole day, every day
	}
	return to.Add(time.Nanosecond), true
}

// earliestIncluded bounds the run of matched seconds only for expressions whose finer fields
// accept every value, where the run plainly lasts to the end of a wall-clock unit; the day
// rules L, W and # carry Quartz quirks that make that reasoning unsafe.
func (c *CronCalendar) earliestIncluded(t time.Time) (time.Time, bool) {
	cr := c.Cron
	if !cr.Matches(t) || cr.lastDOM || cr.nearestWeekday || cr.lastDOW || cr.nthDOW != 0 {
		return t, true
	}
	lt := t.In(calLocation(cr.Location()))
	y, mo, d := lt.Date()
	h, mi, s := lt.Clock()
	everyDay := cronFull(cr.dom, 1, 31) && cr.dowNoSpec || cronFull(cr.dow, 1, 7) && cr.domNoSpec
	var end time.Time // the wall clock at which the run may end, read as UTC
	switch {
	case !cronFull(cr.sec, 0, 59):
		end = time.Date(y, mo, d, h, mi, s+1, 0, time.UTC)
	case !cronFull(cr.min, 0, 59):
		end = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
	case !cronFull(cr.hour, 0, 23):
		end = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
	case !everyDay:
		end = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
	case !cronFull(cr.month, 1, 12):
		end = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
	default:
		end = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	_, off := lt.Zone()
	bound := time.Unix(end.Unix()-int64(off), 0)
	// The wall clock runs evenly only until the next DST change; past it, ask again.
	if change := calZoneEnd(lt); !change.IsZero() && change.Before(bound) {
		bound = change
	}
	return bound, true
}

// cronFull reports whether s holds every value from lo to hi.
func cronFull(s cronSet, lo, hi int) bool {
	for v := lo; v <= hi; v++ {
		if !s.has(v) {
			return false
		}
	}
	return true
}
