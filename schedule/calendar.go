package schedule

import (
	"fmt"
	"slices"
	"time"
)

// The calendar types mirror Quartz's org.quartz.impl.calendar classes. Each has a Location,
// in which it reads the local date and time of the instants it tests (nil means UTC), and an
// optional Base calendar: a time is included only if the calendar and every calendar of its
// Base chain include it, so the chain excludes the union of its members' exclusions and the
// order of the chain does not matter.
//
// Zero values exclude nothing (beyond their Base), so a calendar can be built field by field;
// the constructors validate their arguments and report problems the way Quartz rejects them.

// calLocation returns the zone a calendar reads local times in.
func calLocation(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// calBaseIncludes reports whether the base of a calendar chain includes t.
func calBaseIncludes(base Calendar, t time.Time) bool {
	return base == nil || base.Includes(t)
}

// calDay is a local calendar date.
type calDay struct {
	year  int
	month time.Month
	day   int
}

func calDayOf(t time.Time, loc *time.Location) calDay {
	y, m, d := t.In(calLocation(loc)).Date()
	return calDay{y, m, d}
}

func (d calDay) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.year, d.month, d.day) }

// calValidDate reports whether year-month-day is a real date (time.Date would normalise
// 2023-02-29 to March 1st instead).
func calValidDate(year int, month time.Month, day int) bool {
	if month < time.January || month > time.December || day < 1 {
		return false
	}
	y, m, d := time.Date(year, month, day, 12, 0, 0, 0, time.UTC).Date()
	return y == year && m == month && d == day
}

// HolidayCalendar excludes whole local days of its Location (Quartz's HolidayCalendar). A
// day on which the clocks change is excluded whole, 23 or 25 hours.
type HolidayCalendar struct {
	Location *time.Location
	Base     Calendar

	days map[calDay]bool
}

// NewHolidayCalendar returns a HolidayCalendar in loc excluding each date, given as
// "2006-01-02".
func NewHolidayCalendar(dates []string, loc *time.Location) (*HolidayCalendar, error) {
	c := &HolidayCalendar{Location: loc}
	for _, s := range dates {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, fmt.Errorf("holiday calendar: date %q is not a valid yyyy-mm-dd date", s)
		}
		c.AddDate(d.Year(), d.Month(), d.Day())
	}
	return c, nil
}

// AddDate excludes the local day year-month-day; an impossible date such as February 30 is
// normalised as time.Date does.
func (c *HolidayCalendar) AddDate(year int, month time.Month, day int) {
	y, m, d := time.Date(year, month, day, 12, 0, 0, 0, time.UTC).Date()
	if c.days == nil {
		c.days = make(map[calDay]bool)
	}
	c.days[calDay{y, m, d}] = true
}

// Dates returns the excluded dates as "2006-01-02", in order.
func (c *HolidayCalendar) Dates() []string {
	out := make([]string, 0, len(c.days))
	for d := range c.days {
		out = append(out, d.String())
	}
	slices.Sort(out) // the fixed-width form sorts chronologically for years 0..9999
	return out
}

// Includes reports whether t falls on none of the excluded days.
func (c *HolidayCalendar) Includes(t time.Time) bool {
	return !c.days[calDayOf(t, c.Location)] && calBaseIncludes(c.Base, t)
}

// WeeklyCalendar excludes days of the week (Quartz's WeeklyCalendar). The zero value
// excludes nothing; NewWeeklyCalendar gives Quartz's default, Saturday and Sunday.
type WeeklyCalendar struct {
	Location *time.Location
	Base     Calendar

	// Excluded is indexed by time.Weekday. Excluding all seven days excludes every instant.
	Excluded [7]bool
}

// NewWeeklyCalendar returns a WeeklyCalendar in loc that excludes Saturday and Sunday, as
// Quartz's new WeeklyCalendar() does.
func NewWeeklyCalendar(loc *time.Location) *WeeklyCalendar {
	c := &WeeklyCalendar{Location: loc}
	c.Excluded[time.Saturday] = true
	c.Excluded[time.Sunday] = true
	return c
}

// Includes reports whether t's local weekday is not excluded.
func (c *WeeklyCalendar) Includes(t time.Time) bool {
	return !c.Excluded[t.In(calLocation(c.Location)).Weekday()] && calBaseIncludes(c.Base, t)
}

// MonthlyCalendar excludes days of the month, 1 to 31 (Quartz's MonthlyCalendar); a day
// number a month does not have excludes nothing in that month.
type MonthlyCalendar struct {
	Location *time.Location
	Base     Calendar

	excluded uint32 // bit d is day d
}

// errMonthlyDay is Quartz's verdict on a day number outside 1..31.
const errMonthlyDay = "the day parameter must be in the range of 1 to 31"

// NewMonthlyCalendar returns a MonthlyCalendar in loc excluding each of days.
func NewMonthlyCalendar(days []int, loc *time.Location) (*MonthlyCalendar, error) {
	c := &MonthlyCalendar{Location: loc}
	for _, d := range days {
		if err := c.SetDayExcluded(d, true); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// SetDayExcluded excludes (or includes again) day of every month.
func (c *MonthlyCalendar) SetDayExcluded(day int, excluded bool) error {
	if day < 1 || day > 31 {
		return fmt.Errorf("monthly calendar: day %d: %s", day, errMonthlyDay)
	}
	if excluded {
		c.excluded |= 1 << day
	} else {
		c.excluded &^= 1 << day
	}
	return nil
}

// IsDayExcluded reports whether day of the month is excluded.
func (c *MonthlyCalendar) IsDayExcluded(day int) bool {
	return day >= 1 && day <= 31 && c.excluded&(1<<day) != 0
}

// Includes reports whether t's local day of the month is not excluded.
func (c *MonthlyCalendar) Includes(t time.Time) bool {
	return !c.IsDayExcluded(t.In(calLocation(c.Location)).Day()) && calBaseIncludes(c.Base, t)
}

// MonthDay is a day of the year without the year, such as December 25.
type MonthDay struct {
	Month time.Month
	Day   int
}

func (md MonthDay) String() string { return fmt.Sprintf("%02d-%02d", md.Month, md.Day) }

// AnnualCalendar excludes the same days every year, whole local days (Quartz's
// AnnualCalendar). February 29 is excluded in leap years only, there being no such day in
// other years.
type AnnualCalendar struct {
	Location *time.Location
	Base     Calendar

	days map[MonthDay]bool
}

// NewAnnualCalendar returns an AnnualCalendar in loc excluding each of days. A day must
// exist in some year: 02-29 is accepted, 02-30 is not.
func NewAnnualCalendar(days []MonthDay, loc *time.Location) (*AnnualCalendar, error) {
	c := &AnnualCalendar{Location: loc}
	for _, md := range days {
		if err := c.AddDay(md); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AddDay excludes md every year.
func (c *AnnualCalendar) AddDay(md MonthDay) error {
	if !calValidDate(2000, md.Month, md.Day) { // 2000 is a leap year, so 02-29 passes
		return fmt.Errorf("annual calendar: day %d of month %d exists in no year", md.Day, int(md.Month))
	}
	if c.days == nil {
		c.days = make(map[MonthDay]bool)
	}
	c.days[md] = true
	return nil
}

// Days returns the excluded days in calendar order.
func (c *AnnualCalendar) Days() []MonthDay {
	out := make([]MonthDay, 0, len(c.days))
	for md := range c.days {
		out = append(out, md)
	}
	slices.SortFunc(out, func(a, b MonthDay) int {
		if a.Month != b.Month {
			return int(a.Month) - int(b.Month)
		}
		return a.Day - b.Day
	})
	return out
}

// Includes reports whether t's local month and day are not excluded.
func (c *AnnualCalendar) Includes(t time.Time) bool {
	_, m, d := t.In(calLocation(c.Location)).Date()
	return !c.days[MonthDay{m, d}] && calBaseIncludes(c.Base, t)
}
