package quartz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/internal/javaser"
)

// Quartz 2.3.2's calendar classes, whose serialized fields the decoder reads. A subclass
// (an application's own calendar) may change what a time excludes, so only these exact
// classes are mapped.
const (
	classBase    = "org.quartz.impl.calendar.BaseCalendar"
	classHoliday = "org.quartz.impl.calendar.HolidayCalendar"
	classWeekly  = "org.quartz.impl.calendar.WeeklyCalendar"
	classMonthly = "org.quartz.impl.calendar.MonthlyCalendar"
	classAnnual  = "org.quartz.impl.calendar.AnnualCalendar"
	classDaily   = "org.quartz.impl.calendar.DailyCalendar"
	classCron    = "org.quartz.impl.calendar.CronCalendar"
)

// calendar is a decoded Quartz calendar chain, the calendar itself first and each further
// member the base of the one before.
type calendar struct {
	description string
	members     []calMember
}

// calMember is one calendar of a chain. Its spec (Sundial's calendar spec syntax) depends on
// the zone for the classes that store instants (holidays), so it is built once the zone is
// known.
type calMember struct {
	class string
	// zone is the calendar's TimeZone ID; "" when it has none (Quartz then uses the JVM's
	// default zone).
	zone string
	spec func(loc *time.Location) string
}

// decodeCalendar decodes QRTZ_CALENDARS.CALENDAR. An error says why the calendar cannot be
// imported.
func decodeCalendar(blob []byte) (*calendar, error) {
	v, err := javaser.ParseObject(blob)
	if err != nil {
		return nil, fmt.Errorf("not a Java-serialized calendar: %w", err)
	}
	c := &calendar{}
	for depth := 0; v != nil; depth++ {
		o, ok := v.(*javaser.Object)
		if !ok {
			return nil, fmt.Errorf("the blob holds %s, not a calendar", javaser.Describe(v))
		}
		if depth > 100 {
			return nil, fmt.Errorf("a chain of more than 100 base calendars")
		}
		m, err := decodeMember(o)
		if err != nil {
			return nil, err
		}
		if depth == 0 {
			c.description, _ = fieldOf[string](o, "description")
		}
		c.members = append(c.members, m)
		v, _ = o.Field("baseCalendar")
	}
	return c, nil
}

// fieldOf returns the field name of o if it has the type T.
func fieldOf[T any](o *javaser.Object, name string) (T, bool) {
	v, _ := o.Field(name)
	t, ok := v.(T)
	return t, ok
}

func zoneOf(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	return javaser.TimeZoneID(v)
}

func decodeMember(o *javaser.Object) (calMember, error) {
	m := calMember{class: o.Class.Name}
	if !o.Class.Is(classBase) {
		return m, fmt.Errorf("class %s is not a Quartz calendar Sundial knows", o.Class.Name)
	}
	tz, _ := o.Field("timeZone")
	var err error
	if m.zone, err = zoneOf(tz); err != nil {
		return m, fmt.Errorf("%s: time zone: %w", o.Class.Name, err)
	}
	switch o.Class.Name {
	case classHoliday:
		set, _ := o.Field("dates")
		elems, err := javaser.Collection(set)
		if err != nil {
			return m, fmt.Errorf("HolidayCalendar dates: %w", err)
		}
		var dates []time.Time
		for _, e := range elems {
			d, err := javaser.Date(e)
			if err != nil {
				return m, fmt.Errorf("HolidayCalendar dates: %w", err)
			}
			dates = append(dates, d)
		}
		m.spec = func(loc *time.Location) string {
			var days []string
			for _, d := range dates {
				// Quartz stores the start of the day in the calendar's zone and looks the
				// start of a time's day up: a date that is not a local midnight matches no day.
				l := d.In(loc)
				if l.Hour() == 0 && l.Minute() == 0 && l.Second() == 0 && l.Nanosecond() == 0 {
					days = append(days, l.Format(time.DateOnly))
				}
			}
			return "holiday:" + strings.Join(days, ",")
		}
	case classWeekly:
		days, err := boolArray(o, "excludeDays", 8)
		if err != nil {
			return m, fmt.Errorf("WeeklyCalendar: %w", err)
		}
		m.spec = constSpec("weekly:" + trueIndexes(days, 1, 7, 0))
	case classMonthly:
		days, err := boolArray(o, "excludeDays", 31)
		if err != nil {
			return m, fmt.Errorf("MonthlyCalendar: %w", err)
		}
		m.spec = constSpec("monthly:" + trueIndexes(days, 0, 30, 1))
	case classAnnual:
		list, _ := o.Field("excludeDays")
		elems, err := javaser.Collection(list)
		if err != nil {
			return m, fmt.Errorf("AnnualCalendar days: %w", err)
		}
		var days []string
		for _, e := range elems {
			md, err := monthDay(e)
			if err != nil {
				return m, fmt.Errorf("AnnualCalendar days: %w", err)
			}
			if !slices.Contains(days, md) {
				days = append(days, md)
			}
		}
		slices.Sort(days)
		m.spec = constSpec("annual:" + strings.Join(days, ","))
	case classDaily:
		var v [8]int32
		for i, f := range []string{"rangeStartingHourOfDay", "rangeStartingMinute", "rangeStartingSecond", "rangeStartingMillis",
			"rangeEndingHourOfDay", "rangeEndingMinute", "rangeEndingSecond", "rangeEndingMillis"} {
			n, ok := fieldOf[int32](o, f)
			if !ok {
				return m, fmt.Errorf("DailyCalendar without its field %s", f)
			}
			v[i] = n
		}
		invert, _ := fieldOf[bool](o, "invertTimeRange")
		kind := "daily:"
		if invert {
			kind = "daily!:"
		}
		m.spec = constSpec(fmt.Sprintf("%s%02d:%02d:%02d:%03d-%02d:%02d:%02d:%03d", kind, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]))
	case classCron:
		expr, ok := o.Field("cronExpression")
		eo, isObj := expr.(*javaser.Object)
		if !ok || !isObj || eo.Class.Name != "org.quartz.CronExpression" {
			return m, fmt.Errorf("CronCalendar without its CronExpression")
		}
		s, ok := fieldOf[string](eo, "cronExpression")
		if !ok {
			return m, fmt.Errorf("CronCalendar's CronExpression without its expression")
		}
		if strings.Contains(s, "+") {
			return m, fmt.Errorf("CronCalendar expression %q holds a '+', which a Sundial calendar spec cannot", s)
		}
		// The calendar's zone is its expression's (CronCalendar.getTimeZone).
		tz, _ := eo.Field("timeZone")
		if m.zone, err = zoneOf(tz); err != nil {
			return m, fmt.Errorf("CronCalendar: time zone: %w", err)
		}
		m.spec = constSpec("cron:" + s)
	default:
		return m, fmt.Errorf("class %s is not one of Quartz's own calendars (an application's calendar class decides in its own code what it excludes)", o.Class.Name)
	}
	return m, nil
}

func constSpec(s string) func(*time.Location) string {
	return func(*time.Location) string { return s }
}

func boolArray(o *javaser.Object, field string, n int) ([]bool, error) {
	a, ok := fieldOf[*javaser.Array](o, field)
	if !ok || a.Class.Name != "[Z" || len(a.Elems) < n {
		return nil, fmt.Errorf("field %s is not a boolean[%d]", field, n)
	}
	out := make([]bool, len(a.Elems))
	for i, e := range a.Elems {
		out[i], _ = e.(bool)
	}
	return out, nil
}

// trueIndexes lists, comma-separated, i+add for each true element from index lo to hi.
func trueIndexes(b []bool, lo, hi, add int) string {
	var out []string
	for i := lo; i <= hi && i < len(b); i++ {
		if b[i] {
			out = append(out, strconv.Itoa(i+add))
		}
	}
	return strings.Join(out, ",")
}

// monthDay reads the month and day (MM-DD) of a serialized java.util.Calendar as Quartz's
// AnnualCalendar reads them: from its instant, in its own zone.
func monthDay(v any) (string, error) {
	o, ok := v.(*javaser.Object)
	if !ok || !o.Class.Is("java.util.Calendar") {
		return "", fmt.Errorf("want a java.util.Calendar, have %s", javaser.Describe(v))
	}
	ms, ok := fieldOf[int64](o, "time")
	if !ok {
		return "", fmt.Errorf("a %s without its time", o.Class.Name)
	}
	// Calendar.writeObject keeps the real zone in its annotation (the field holds a
	// SimpleTimeZone stand-in with the same ID).
	zone := ""
	if cd, ok := o.ClassData("java.util.Calendar"); ok && len(cd.Annotation) > 0 && cd.Annotation[0] != nil {
		zone, _ = javaser.TimeZoneID(cd.Annotation[0])
	}
	if zone == "" {
		z, _ := o.Field("zone")
		zone, _ = zoneOf(z)
	}
	loc, err := loadZone(zone)
	if err != nil {
		return "", err
	}
	t := time.UnixMilli(ms).In(loc)
	return fmt.Sprintf("%02d-%02d", t.Month(), t.Day()), nil
}
