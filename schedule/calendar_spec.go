package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// calLinker is a calendar that has a base calendar (every calendar type of this package).
type calLinker interface {
	Calendar
	setBase(Calendar)
	base() Calendar
	location() *time.Location
	// spec formats the calendar alone in ParseCalendarSpec's syntax.
	spec() string
}

func (c *HolidayCalendar) location() *time.Location { return calLocation(c.Location) }
func (c *WeeklyCalendar) location() *time.Location  { return calLocation(c.Location) }
func (c *MonthlyCalendar) location() *time.Location { return calLocation(c.Location) }
func (c *AnnualCalendar) location() *time.Location  { return calLocation(c.Location) }
func (c *DailyCalendar) location() *time.Location   { return calLocation(c.Location) }

func (c *HolidayCalendar) spec() string { return "holiday:" + strings.Join(c.Dates(), ",") }

func (c *WeeklyCalendar) spec() string {
	var days []string
	for d, ex := range c.Excluded {
		if ex {
			days = append(days, strconv.Itoa(d+1))
		}
	}
	return "weekly:" + strings.Join(days, ",")
}

func (c *MonthlyCalendar) spec() string {
	var days []string
	for d := 1; d <= 31; d++ {
		if c.IsDayExcluded(d) {
			days = append(days, strconv.Itoa(d))
		}
	}
	return "monthly:" + strings.Join(days, ",")
}

func (c *AnnualCalendar) spec() string {
	var days []string
	for _, md := range c.Days() {
		days = append(days, md.String())
	}
	return "annual:" + strings.Join(days, ",")
}

func (c *DailyCalendar) spec() string {
	kind := "daily:"
	if c.Invert {
		kind = "daily!:"
	}
	return kind + c.From.String() + "-" + c.To.String()
}

// FormatCalendarSpec formats a chain of this package's calendars in ParseCalendarSpec's
// syntax ("none" for nil), so that a chain can be stored as text. The spec does not hold the
// zone: every calendar of the chain must have the same Location, which the caller stores
// beside the spec.
func FormatCalendarSpec(cal Calendar) (string, error) {
	if cal == nil {
		return "none", nil
	}
	var parts []string
	var loc *time.Location
	for c := cal; c != nil; {
		l, ok := c.(calLinker)
		if !ok {
			return "", fmt.Errorf("calendar %T has no spec form", c)
		}
		if loc == nil {
			loc = l.location()
		} else if l.location().String() != loc.String() {
			return "", fmt.Errorf("calendar chain mixes zones %s and %s; a spec has one zone", loc, l.location())
		}
		parts = append(parts, l.spec())
		c = l.base()
	}
	return strings.Join(parts, "+"), nil
}

func (c *HolidayCalendar) base() Calendar { return c.Base }
func (c *WeeklyCalendar) base() Calendar  { return c.Base }
func (c *MonthlyCalendar) base() Calendar { return c.Base }
func (c *AnnualCalendar) base() Calendar  { return c.Base }
func (c *DailyCalendar) base() Calendar   { return c.Base }

func (c *HolidayCalendar) setBase(b Calendar) { c.Base = b }
func (c *WeeklyCalendar) setBase(b Calendar)  { c.Base = b }
func (c *MonthlyCalendar) setBase(b Calendar) { c.Base = b }
func (c *AnnualCalendar) setBase(b Calendar)  { c.Base = b }
func (c *DailyCalendar) setBase(b Calendar)   { c.Base = b }

// ParseCalendarSpec builds a calendar chain, every member in loc, from a spec in the Quartz
// oracle's CALSPEC syntax: "none" (no calendar: nil, nil), or calendars joined with "+", the
// leftmost first and each further one the Base of the one before:
//
//	holiday:2024-06-12,2024-12-25   these local dates (HolidayCalendar)
//	weekly                          Saturday and Sunday (Quartz's default WeeklyCalendar)
//	weekly:1,7                      days of the week, 1 = Sunday ... 7 = Saturday; 0 is
//	                                accepted and means nothing, as in Quartz
//	monthly:1,15,31                 days of the month (MonthlyCalendar)
//	annual:12-25,01-01              MM-DD every year (AnnualCalendar)
//	daily:09:00-17:00               a clock-time range, ends HH:MM[:SS[:mmm]] (DailyCalendar)
//	daily!:09:00-17:00              everything outside the range (inverted DailyCalendar)
//	cron:* * 1 ? * *                the seconds a Quartz cron expression matches (CronCalendar)
//
// A list after the colon may be empty ("holiday:" excludes nothing). A cron expression may
// contain spaces but not "+".
func ParseCalendarSpec(spec string, loc *time.Location) (Calendar, error) {
	spec = strings.TrimSpace(spec)
	if spec == "none" {
		return nil, nil
	}
	if spec == "" {
		return nil, fmt.Errorf("calendar spec is empty (want \"none\" or calendars joined with +)")
	}
	chain, err := calParseParts(spec, loc)
	if err != nil {
		return nil, err
	}
	return calLink(chain), nil
}

// calParseParts parses the members of a spec joined with "+", each in loc.
func calParseParts(spec string, loc *time.Location) ([]calLinker, error) {
	var chain []calLinker
	for _, part := range strings.Split(spec, "+") {
		c, err := calParseOne(strings.TrimSpace(part), loc)
		if err != nil {
			return nil, err
		}
		chain = append(chain, c)
	}
	return chain, nil
}

// calLink makes each member of chain the Base of the one before and returns the first.
func calLink(chain []calLinker) Calendar {
	if len(chain) == 0 {
		return nil
	}
	for i := 0; i+1 < len(chain); i++ {
		chain[i].setBase(chain[i+1])
	}
	return chain[0]
}

// CalendarLink is one stored calendar of a chain: its spec (ParseCalendarSpec's syntax) and
// its own zone, "" for none.
type CalendarLink struct {
	Spec string
	Zone string
}

// BuildCalendarChain builds a chain of stored calendars, each the base of the one before,
// for a trigger that computes in loc. This is the one place the zone a calendar is read in
// is decided: a link with a Zone reads its exclusions in that zone, as Quartz converts the
// fire time to its calendar's TimeZone before the check (each calendar of a Quartz chain in
// its own zone); a link without one is read in loc, the trigger's zone (Quartz's calendar
// without a TimeZone takes the JVM's, which an imported calendar names explicitly). A link
// whose spec is "none" excludes nothing.
func BuildCalendarChain(links []CalendarLink, loc *time.Location) (Calendar, error) {
	var chain []calLinker
	for _, l := range links {
		if strings.TrimSpace(l.Spec) == "none" {
			continue
		}
		zl := loc
		if l.Zone != "" {
			var err error
			if zl, err = LoadZone(l.Zone); err != nil {
				return nil, fmt.Errorf("calendar zone: %w", err)
			}
		}
		parts, err := calParseParts(strings.TrimSpace(l.Spec), zl)
		if err != nil {
			return nil, err
		}
		chain = append(chain, parts...)
	}
	return calLink(chain), nil
}

// calParseOne parses one member of a calendar spec.
func calParseOne(s string, loc *time.Location) (calLinker, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	kind = strings.TrimSpace(kind)
	if kind == "weekly" && !hasArg {
		return NewWeeklyCalendar(loc), nil
	}
	if !hasArg {
		switch kind {
		case "holiday", "monthly", "annual", "daily", "daily!", "cron":
			return nil, fmt.Errorf("calendar %q: missing ':' and its arguments", s)
		}
		return nil, fmt.Errorf("unknown calendar %q (want holiday, weekly, monthly, annual, daily, daily! or cron)", kind)
	}
	switch kind {
	case "holiday":
		return NewHolidayCalendar(calList(arg), loc)
	case "weekly":
		return calParseWeekly(arg, loc)
	case "monthly":
		var days []int
		for _, item := range calList(arg) {
			d, err := strconv.Atoi(item)
			if err != nil {
				return nil, fmt.Errorf("monthly calendar: day %q is not a number", item)
			}
			days = append(days, d)
		}
		return NewMonthlyCalendar(days, loc)
	case "annual":
		var days []MonthDay
		for _, item := range calList(arg) {
			md, err := calParseMonthDay(item)
			if err != nil {
				return nil, err
			}
			days = append(days, md)
		}
		return NewAnnualCalendar(days, loc)
	case "daily", "daily!":
		from, to, err := ParseTimeOfDayRange(strings.TrimSpace(arg))
		if err != nil {
			return nil, fmt.Errorf("daily calendar: %w", err)
		}
		return &DailyCalendar{Location: loc, From: from, To: to, Invert: kind == "daily!"}, nil
	case "cron":
		return calNewCronCalendarSpec(strings.TrimSpace(arg), loc)
	}
	return nil, fmt.Errorf("unknown calendar %q (want holiday, weekly, monthly, annual, daily, daily! or cron)", kind)
}

// calList splits a comma-separated list; an empty list has no items.
func calList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// calParseWeekly reads Quartz's day numbers, 1 = Sunday ... 7 = Saturday. Quartz takes 0
// without complaint (its array has an unused slot 0) and fails on anything else.
func calParseWeekly(arg string, loc *time.Location) (*WeeklyCalendar, error) {
	c := &WeeklyCalendar{Location: loc}
	for _, item := range calList(arg) {
		d, err := strconv.Atoi(item)
		if err != nil {
			return nil, fmt.Errorf("weekly calendar: day %q is not a number", item)
		}
		switch {
		case d == 0:
		case d >= 1 && d <= 7:
			c.Excluded[time.Weekday(d-1)] = true
		default:
			return nil, fmt.Errorf("weekly calendar: day %d is out of range (1 = Sunday ... 7 = Saturday)", d)
		}
	}
	return c, nil
}

// calParseMonthDay reads MM-DD.
func calParseMonthDay(s string) (MonthDay, error) {
	ms, ds, ok := strings.Cut(s, "-")
	m, err1 := strconv.Atoi(ms)
	d, err2 := strconv.Atoi(ds)
	if !ok || err1 != nil || err2 != nil {
		return MonthDay{}, fmt.Errorf("annual calendar: day %q is not MM-DD", s)
	}
	return MonthDay{time.Month(m), d}, nil
}
