package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClockTime is a time of day with millisecond precision, as a DailyCalendar's range ends.
type ClockTime struct {
	Hour, Minute, Second, Millisecond int
}

// ParseClockTime parses HH:MM, HH:MM:SS or HH:MM:SS:mmm (Quartz's DailyCalendar format; the
// milliseconds follow a colon, not a dot). Like Quartz it accepts any number of digits per
// field but checks the ranges: hour 0-23, minute and second 0-59, millisecond 0-999.
func ParseClockTime(s string) (ClockTime, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return ClockTime{}, fmt.Errorf("time of day %q: want HH:MM[:SS[:mmm]]", s)
	}
	var v [4]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || p == "" || p[0] < '0' || p[0] > '9' {
			return ClockTime{}, fmt.Errorf("time of day %q: %q is not a number", s, p)
		}
		v[i] = n
	}
	ct := ClockTime{v[0], v[1], v[2], v[3]}
	return ct, ct.validate()
}

// validate reports the first field out of range, named as Quartz names it.
func (ct ClockTime) validate() error {
	switch {
	case ct.Hour < 0 || ct.Hour > 23:
		return fmt.Errorf("invalid hour of day: %d", ct.Hour)
	case ct.Minute < 0 || ct.Minute > 59:
		return fmt.Errorf("invalid minute: %d", ct.Minute)
	case ct.Second < 0 || ct.Second > 59:
		return fmt.Errorf("invalid second: %d", ct.Second)
	case ct.Millisecond < 0 || ct.Millisecond > 999:
		return fmt.Errorf("invalid millis: %d", ct.Millisecond)
	}
	return nil
}

// String formats ct as HH:MM:SS:mmm, which ParseClockTime reads back.
func (ct ClockTime) String() string {
	return fmt.Sprintf("%02d:%02d:%02d:%03d", ct.Hour, ct.Minute, ct.Second, ct.Millisecond)
}

func (ct ClockTime) millis() int {
	return ((ct.Hour*60+ct.Minute)*60+ct.Second)*1000 + ct.Millisecond
}

// on returns ct on the local date y-m-d in loc, resolved as Java's GregorianCalendar does
// (see javaWallTime), because Quartz sets the range ends as fields of the day's calendar.
func (ct ClockTime) on(y int, m time.Month, d int, loc *time.Location) time.Time {
	return javaWallTime(loc, y, m, d, ct.Hour, ct.Minute, ct.Second, ct.Millisecond*int(time.Millisecond))
}

// ParseTimeOfDayRange parses "FROM-TO" with both ends in ParseClockTime's format and FROM
// strictly before TO (a range cannot cross midnight).
func ParseTimeOfDayRange(s string) (from, to ClockTime, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return from, to, fmt.Errorf("time range %q: want FROM-TO", s)
	}
	if from, err = ParseClockTime(a); err != nil {
		return from, to, fmt.Errorf("time range start: %w", err)
	}
	if to, err = ParseClockTime(b); err != nil {
		return from, to, fmt.Errorf("time range end: %w", err)
	}
	return from, to, calCheckRange(from, to)
}

func calCheckRange(from, to ClockTime) error {
	if from.millis() >= to.millis() {
		return fmt.Errorf("invalid time range %s - %s: the start must be before the end (a range cannot cross midnight)", from, to)
	}
	return nil
}

// DailyCalendar excludes a range of local clock time, both ends inclusive, every day
// (Quartz's DailyCalendar); with Invert it excludes everything outside the range instead.
//
// The ends are wall-clock times of the tested instant's local day. On a day when the
// clocks change they resolve as in Quartz: an end in a spring-forward gap moves later by the
// gap (02:30 becomes 03:30 in New York), and an end in a fall-back overlap means its second
// pass (01:30 is 01:30 EST, so 01:30 EDT lies before it).
//
// Deliberate divergence: Quartz's non-inverted DailyCalendar also excludes 00:00:00.000 and
// 23:59:59.999 of every day, whatever its range (its comparisons with the day's bounds are
// strict); this one excludes exactly the range.
type DailyCalendar struct {
	Location *time.Location
	Base     Calendar

	From, To ClockTime // From must be before To
	Invert   bool
}

// NewDailyCalendar returns a DailyCalendar in loc for the range from-to, each end in
// ParseClockTime's format.
func NewDailyCalendar(from, to string, invert bool, loc *time.Location) (*DailyCalendar, error) {
	f, err := ParseClockTime(from)
	if err != nil {
		return nil, fmt.Errorf("daily calendar: range start: %w", err)
	}
	t, err := ParseClockTime(to)
	if err != nil {
		return nil, fmt.Errorf("daily calendar: range end: %w", err)
	}
	if err := calCheckRange(f, t); err != nil {
		return nil, fmt.Errorf("daily calendar: %w", err)
	}
	return &DailyCalendar{Location: loc, From: f, To: t, Invert: invert}, nil
}

// Includes reports whether t lies outside the range (inside it, when inverted).
func (c *DailyCalendar) Includes(t time.Time) bool {
	loc := calLocation(c.Location)
	y, m, d := t.In(loc).Date()
	inRange := !t.Before(c.From.on(y, m, d, loc)) && !t.After(c.To.on(y, m, d, loc))
	return inRange == c.Invert && calBaseIncludes(c.Base, t)
}
