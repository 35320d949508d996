package schedule

import (
	"math"
	"time"
)

// Next follows Quartz 2.3.2's getTimeAfter step by step. Quartz walks a lenient
// java.util.GregorianCalendar: it sets wall-clock fields (possibly out of range, such as
// minute 60 or day 32) and reads them back, and every read re-resolves the wall time to an
// instant. That resolution is where Quartz's DST behaviour comes from (gap times move forward
// by the gap, ambiguous times take the later, standard-time pass), so cronCal reproduces it:
// fields are kept as Java keeps them and normalised through cronZone on each read.

// cronMaxSteps bounds the walk. A real expression needs a few dozen steps per year searched;
// the bound only stops expressions that make Quartz itself loop.
const cronMaxSteps = 200_000

// cronZone resolves instants and wall times in one location, caching the zone period it last
// looked at so that most conversions need no lookup.
type cronZone struct {
	loc        *time.Location
	loaded     bool
	start, end int64 // the cached period [start, end), unix seconds
	off        int64 // its UTC offset in seconds
	nextOff    int64 // the offset of the period starting at end
}

func (z *cronZone) init(loc *time.Location) {
	z.loc = loc
	if loc == time.UTC {
		z.loaded, z.start, z.end = true, math.MinInt64, math.MaxInt64
	}
}

func (z *cronZone) load(x int64) {
	t := time.Unix(x, 0).In(z.loc)
	_, off := t.Zone()
	s, e := t.ZoneBounds()
	z.off, z.start, z.end = int64(off), math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		z.start = s.Unix()
	}
	if !e.IsZero() {
		z.end = e.Unix()
		_, next := e.Zone()
		z.nextOff = int64(next)
	}
	z.loaded = true
}

// offsetAt is the UTC offset at instant x.
func (z *cronZone) offsetAt(x int64) int64 {
	if !z.loaded || x < z.start || x >= z.end {
		z.load(x)
	}
	return z.off
}

// resolve turns a wall time (seconds since 1970-01-01 00:00 local) into an instant as Java's
// ZoneInfo does: it uses the offset of the last transition whose own wall time (the instant
// plus the new offset) is at or before w.
func (z *cronZone) resolve(w int64) int64 {
	if !z.loaded {
		z.load(w)
	}
	for range 16 {
		x := w - z.off
		if x < z.start {
			z.load(z.start - 1)
			continue
		}
		if z.end != math.MaxInt64 && z.end+z.nextOff <= w {
			z.load(z.end)
			continue
		}
		return x
	}
	return w - z.off
}

// cronCal mirrors a lenient GregorianCalendar: the fields may be out of range until read.
type cronCal struct {
	z                                 *cronZone
	year, month0, day, hour, min, sec int   // month0 is 0-based, as in Java
	days                              int64 // days since 1970-01-01 of the normalised date
	inst                              int64 // the instant, unix seconds, when !dirty
	dirty                             bool
}

func (c *cronCal) setInstant(x int64) {
	w := x + c.z.offsetAt(x)
	days := cronFloorDiv(w, 86400)
	rem := int(w - days*86400)
	c.days = days
	c.year, c.month0, c.day = cronCivil(days)
	c.hour, c.min, c.sec = rem/3600, rem/60%60, rem%60
	c.inst, c.dirty = x, false
}

// norm is what any Calendar.get does: resolve the fields to an instant and read them back.
func (c *cronCal) norm() {
	if !c.dirty {
		return
	}
	y := int64(c.year) + cronFloorDiv(int64(c.month0), 12)
	m := int(int64(c.month0) - cronFloorDiv(int64(c.month0), 12)*12)
	days := cronDaysFromCivil(y, m) + int64(c.day) - 1
	w := days*86400 + int64(c.hour)*3600 + int64(c.min)*60 + int64(c.sec)
	c.setInstant(c.z.resolve(w))
}

// Setters mark the calendar dirty only on a change: a normalised calendar re-resolves to the
// same instant, so setting a field to its current value changes nothing.
func (c *cronCal) setSec(v int) {
	if c.sec != v {
		c.sec, c.dirty = v, true
	}
}

func (c *cronCal) setMin(v int) {
	if c.min != v {
		c.min, c.dirty = v, true
	}
}

func (c *cronCal) setHour(v int) {
	if c.hour != v {
		c.hour, c.dirty = v, true
	}
}

func (c *cronCal) setDay(v int) {
	if c.day != v {
		c.day, c.dirty = v, true
	}
}

func (c *cronCal) setMonth0(v int) {
	if c.month0 != v {
		c.month0, c.dirty = v, true
	}
}

func (c *cronCal) setYear(v int) {
	if c.year != v {
		c.year, c.dirty = v, true
	}
}

// startOfDay sets the time fields to midnight, day and month0 as given.
func (c *cronCal) startOfDay(day, month0 int) {
	c.setSec(0)
	c.setMin(0)
	c.setHour(0)
	c.setDay(day)
	c.setMonth0(month0)
}

// setHourDST is Quartz's setCalendarHour: an hour that does not exist that day becomes the
// next one.
func (c *cronCal) setHourDST(hour int) {
	c.setHour(hour)
	c.norm()
	if c.hour != hour && hour != 24 {
		c.setHour(hour + 1)
	}
}

// weekday is Java's DAY_OF_WEEK of the normalised date, 1 = Sunday.
func (c *cronCal) weekday() int {
	return int(cronFloorMod(c.days+4, 7)) + 1
}

// next returns the first second at which c matches after the instant afterMs (epoch ms).
func (c *Cron) next(afterMs int64) (int64, bool) {
	var z cronZone
	z.init(c.loc)
	// Quartz starts one second later with the milliseconds dropped, and re-reads that
	// instant through its wall fields (which moves the first pass of an overlap to the second).
	from := cronFloorDiv(afterMs+1000, 1000)
	cl := cronCal{z: &z}
	cl.setInstant(from)
	cl.dirty = true
	cl.norm()
	maxYear := min(cl.year+horizonYears, cronLastYear)

	for range cronMaxSteps {
		cl.norm()
		if cl.year > cronLastYear {
			return 0, false
		}

		// Second.
		sec, min := cl.sec, cl.min
		if v, ok := c.sec.next(sec); ok {
			sec = v
		} else {
			sec = c.sec.first()
			min++
			cl.setMin(min)
		}
		cl.setSec(sec)

		// Minute.
		cl.norm()
		min, hr := cl.min, cl.hour
		t := -1
		if v, ok := c.min.next(min); ok {
			t, min = min, v
		} else {
			min = c.min.first()
			hr++
		}
		if min != t {
			cl.setSec(0)
			cl.setMin(min)
			cl.setHourDST(hr)
			continue
		}
		cl.setMin(min)

		// Hour.
		cl.norm()
		hr, day := cl.hour, cl.day
		t = -1
		if v, ok := c.hour.next(hr); ok {
			t, hr = hr, v
		} else {
			hr = c.hour.first()
			day++
		}
		if hr != t {
			cl.setSec(0)
			cl.setMin(0)
			cl.setDay(day)
			cl.setHourDST(hr)
			continue
		}
		cl.setHour(hr)

		// Day.
		cl.norm()
		var again bool
		if c.dowNoSpec {
			again = c.dayByMonth(&cl, sec, from)
		} else {
			again = c.dayByWeek(&cl)
		}
		if again {
			continue
		}

		// Month.
		cl.norm()
		mon, year := cl.month0+1, cl.year
		if year > maxYear {
			return 0, false
		}
		t = -1
		if v, ok := c.month.next(mon); ok {
			t, mon = mon, v
		} else {
			mon = c.month.first()
			year++
		}
		if mon != t {
			cl.startOfDay(1, mon-1)
			cl.setYear(year)
			continue
		}
		cl.setMonth0(mon - 1)

		// Year.
		cl.norm()
		year = cl.year
		v, ok := c.years.next(year)
		if !ok {
			return 0, false
		}
		if v != year {
			cl.startOfDay(1, 0)
			cl.setYear(v)
			continue
		}
		cl.norm()
		return cl.inst, true
	}
	return 0, false
}

// dayByMonth is the day step for day-of-month rules; sec is the second the walk chose. It
// reports whether the walk must start over; otherwise the day is set in cl.
func (c *Cron) dayByMonth(cl *cronCal, sec int, from int64) bool {
	day, mon, year := cl.day, cl.month0+1, cl.year
	t, tmon := -1, mon
	switch {
	case c.lastDOM && !c.nearestWeekday:
		t = day
		day = cronMonthLen(mon, year) - c.lastDOMOffset
		if t > day {
			mon++
			if mon > 12 {
				mon = 1
				tmon = -1 // forces the restart below
				cl.norm()
				cl.setYear(cl.year + 1) // December: no day to pin
			}
			day = 1
		}
	case c.lastDOM:
		t = day
		day = cronMonthLen(mon, year) - c.lastDOMOffset
		var before bool
		day, before = c.nearestWeekdayOf(cl, sec, day, mon, year, from)
		if before {
			day = 1
			mon++
		}
	case c.nearestWeekday:
		t = day
		var before bool
		day, before = c.nearestWeekdayOf(cl, sec, c.dom.first(), mon, year, from)
		if before {
			day = c.dom.first()
			mon++
		}
	default:
		if v, ok := c.dom.next(day); ok {
			t, day = day, v
			if day > cronMonthLen(mon, year) {
				day = c.dom.first()
				mon++
			}
		} else {
			day = c.dom.first()
			mon++
		}
	}
	if day != t || mon != tmon {
		cl.startOfDay(day, mon-1)
		return true
	}
	cl.setDay(day)
	return false
}

// nearestWeekdayOf moves day of mon/year to the nearest weekday within the month, and reports
// whether that day at cl's time of day is before from. Quartz computes both on a second
// calendar; its quirks (a day outside the month rolls over, the year is kept from the first
// read) are kept.
func (c *Cron) nearestWeekdayOf(cl *cronCal, sec, day, mon, year int, from int64) (int, bool) {
	tc := cronCal{z: cl.z, year: year, month0: mon - 1, day: day, dirty: true}
	tc.norm()
	last := cronMonthLen(mon, year)
	switch dow := tc.weekday(); {
	case dow == 7 && day == 1:
		day += 2
	case dow == 7:
		day--
	case dow == 1 && day == last:
		day -= 2
	case dow == 1:
		day++
	}
	tc.setSec(sec) // the second Quartz chose, which a lenient set may have carried over
	tc.setMin(cl.min)
	tc.setHour(cl.hour)
	tc.setDay(day)
	tc.setMonth0(mon - 1)
	tc.norm()
	return day, tc.inst < from
}

// dayByWeek is the day step for day-of-week rules.
func (c *Cron) dayByWeek(cl *cronCal) bool {
	day, mon, year := cl.day, cl.month0+1, cl.year
	cDow := cl.weekday()
	toAdd := func(dow int) int {
		switch {
		case cDow < dow:
			return dow - cDow
		case cDow > dow:
			return dow + 7 - cDow
		}
		return 0
	}
	last := cronMonthLen(mon, year)
	switch {
	case c.lastDOW:
		add := toAdd(c.dowFirst)
		if day+add > last {
			cl.startOfDay(1, mon)
			return true
		}
		for day+add+7 <= last {
			add += 7
		}
		if add > 0 {
			cl.startOfDay(day+add, mon-1)
			return true
		}
	case c.nthDOW != 0:
		add := toAdd(c.dowFirst)
		shifted := add > 0
		day += add
		week := day / 7
		if day%7 > 0 {
			week++
		}
		add = (c.nthDOW - week) * 7
		day += add
		if add < 0 || day > last {
			cl.startOfDay(1, mon)
			return true
		}
		if add > 0 || shifted {
			cl.startOfDay(day, mon-1)
			return true
		}
	default:
		dow := c.dowFirst
		if v, ok := c.dow.next(cDow); ok {
			dow = v
		}
		add := toAdd(dow)
		if day+add > last {
			cl.startOfDay(1, mon)
			return true
		}
		if add > 0 {
			cl.startOfDay(day+add, mon-1)
			return true
		}
	}
	cl.setDay(day)
	return false
}

func cronMonthLen(mon, year int) int {
	switch mon {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func cronFloorMod(a, b int64) int64 { return a - cronFloorDiv(a, b)*b }

// cronDaysFromCivil is the number of days from 1970-01-01 to the first of month0 (0-based)
// of year, proleptic Gregorian.
func cronDaysFromCivil(year int64, month0 int) int64 {
	m := int64(month0) + 1
	if m <= 2 {
		year--
	}
	era := cronFloorDiv(year, 400)
	yoe := year - era*400
	mp := (m + 9) % 12
	doy := (153*mp + 2) / 5
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// cronCivil is the inverse: year, 0-based month and day of days since 1970-01-01.
func cronCivil(days int64) (year, month0, day int) {
	z := days + 719468
	era := cronFloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m - 1), int(d)
}
