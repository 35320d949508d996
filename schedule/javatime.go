package schedule

import "time"

// This file reproduces the wall-clock arithmetic of java.util.GregorianCalendar (lenient), which
// Quartz's calendar-interval and daily-interval triggers are built on. Go's time.Date does not
// promise which instant it picks for a wall time that falls in a DST gap or overlap; Quartz's
// answers depend on exactly which one Java picks, so the rules are spelled out here.

// javaWallTime returns the instant that a lenient GregorianCalendar in loc resolves the given
// wall-clock fields to (Calendar.set followed by getTime). Out-of-range fields carry over as in
// time.Date.
//
// Java applies a zone transition at instant T with new offset o to every wall time at or after
// T+o. So a wall time inside a spring-forward gap is read with the old offset (it moves forward
// by the length of the gap: 02:30 becomes 03:30 daylight time), and a wall time inside a
// fall-back overlap is read with the new offset (the later, standard-time pass).
func javaWallTime(loc *time.Location, year int, month time.Month, day, hour, min, sec, nsec int) time.Time {
	wall := time.Date(year, month, day, hour, min, sec, nsec, time.UTC)
	off := javaOffsetForWall(loc, wall.Unix())
	return wall.Add(-time.Duration(off) * time.Second).In(loc)
}

// javaOffsetForWall returns the UTC offset (seconds) Java uses to read the wall time wallSec
// (seconds since the epoch, as if the wall clock were UTC) in loc.
func javaOffsetForWall(loc *time.Location, wallSec int64) int {
	// Start two days early: every real offset is within ±26 h, so no transition that matters
	// lies before this instant; then walk forward through the transitions.
	t := time.Unix(wallSec-2*86400, 0).In(loc)
	_, off := t.Zone()
	for range 16 {
		_, end := t.ZoneBounds()
		if end.IsZero() {
			break
		}
		_, after := end.Zone()
		if end.Unix()+int64(after) > wallSec {
			break
		}
		off, t = after, end
	}
	return off
}

// javaAddDays is GregorianCalendar.add(DAY_OF_YEAR, n) (and WEEK_OF_YEAR, DATE, with n in
// days). Unlike set, it first reads the new date's wall time with the offset in force before
// the add, then corrects by the change of offset unless that correction changes the date. A
// wall time in a spring-forward gap therefore moves back (02:30 becomes 01:30 standard time),
// and one in a fall-back overlap keeps the offset it had.
func javaAddDays(t time.Time, n int) time.Time {
	loc := t.Location()
	_, off0 := t.Zone()
	y, m, d := t.Date()
	wall := time.Date(y, m, d+n, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	r := wall.Add(-time.Duration(off0) * time.Second).In(loc)
	_, off1 := r.Zone()
	if diff := off0 - off1; diff != 0 {
		adj := r.Add(time.Duration(diff) * time.Second)
		if ay, am, ad := adj.Date(); ay == wall.Year() && am == wall.Month() && ad == wall.Day() {
			r = adj
		}
	}
	return r
}

// javaAddMonths is GregorianCalendar.add(MONTH, n): the month changes, the day of month is
// clamped to the new month's length, and the wall time is resolved as by set (javaWallTime).
// The clamp is not undone by later adds, which is why repeated adds accumulate it.
func javaAddMonths(t time.Time, n int) time.Time {
	y, m, d := t.Date()
	months := int(m) - 1 + n
	y += javaFloorDiv(months, 12)
	m = time.Month(months - javaFloorDiv(months, 12)*12 + 1)
	if last := javaDaysInMonth(y, m); d > last {
		d = last
	}
	return javaWallTime(t.Location(), y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond())
}

// javaSetHour is GregorianCalendar.set(HOUR_OF_DAY, h) followed by getTime.
func javaSetHour(t time.Time, h int) time.Time {
	y, m, d := t.Date()
	return javaWallTime(t.Location(), y, m, d, h, t.Minute(), t.Second(), t.Nanosecond())
}

// javaDaysInMonth returns the number of days of month m in year y (proleptic Gregorian).
func javaDaysInMonth(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func javaFloorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// javaSameDay reports whether a and b fall on the same calendar day in their location.
func javaSameDay(a, b time.Time) bool {
	return a.YearDay() == b.YearDay() && a.Year() == b.Year()
}
