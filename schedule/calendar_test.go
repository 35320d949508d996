package schedule

import (
	"strings"
	"testing"
	"time"
)

func calZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// calAt is a wall time in loc for tests that stay clear of DST changes (time.Date's choice).
func calAt(loc *time.Location, y int, m time.Month, d, h, mi, s, ms int) time.Time {
	return time.Date(y, m, d, h, mi, s, ms*int(time.Millisecond), loc)
}

// calOffset returns t at the given UTC offset in hours, for instants inside a DST overlap
// that time.Date cannot name.
func calOffset(y int, m time.Month, d, h, mi int, offHours float64) time.Time {
	return time.Date(y, m, d, h, mi, 0, 0, time.FixedZone("", int(offHours*3600)))
}

func calCheck(t *testing.T, name string, cal Calendar, at time.Time, want bool) {
	t.Helper()
	if got := cal.Includes(at); got != want {
		t.Errorf("%s: Includes(%s) = %v, want %v", name, at.Format(time.RFC3339Nano), got, want)
	}
}

func TestHolidayCalendarZones(t *testing.T) {
	tokyo := calZone(t, "Asia/Tokyo")
	for _, loc := range []*time.Location{nil, tokyo} {
		c, err := NewHolidayCalendar([]string{"2024-12-25"}, loc)
		if err != nil {
			t.Fatal(err)
		}
		l := calLocation(loc)
		calCheck(t, l.String(), c, calAt(l, 2024, 12, 24, 23, 59, 59, 999), true)
		calCheck(t, l.String(), c, calAt(l, 2024, 12, 25, 0, 0, 0, 0), false)
		calCheck(t, l.String(), c, calAt(l, 2024, 12, 25, 23, 59, 59, 999), false)
		calCheck(t, l.String(), c, calAt(l, 2024, 12, 26, 0, 0, 0, 0), true)
	}
	// 2024-12-25T03:00Z is Christmas in UTC and in Tokyo (12:00); 2024-12-25T18:00Z is the
	// 26th in Tokyo.
	utc, _ := NewHolidayCalendar([]string{"2024-12-25"}, nil)
	tk, _ := NewHolidayCalendar([]string{"2024-12-25"}, tokyo)
	at := time.Date(2024, 12, 25, 18, 0, 0, 0, time.UTC)
	calCheck(t, "UTC", utc, at, false)
	calCheck(t, "Tokyo", tk, at, true)
	at = time.Date(2024, 12, 24, 16, 0, 0, 0, time.UTC)
	calCheck(t, "UTC", utc, at, true)
	calCheck(t, "Tokyo", tk, at, false)
}

func TestHolidayCalendarDSTDays(t *testing.T) {
	ny := calZone(t, "America/New_York")
	c, err := NewHolidayCalendar([]string{"2024-03-10", "2024-11-03"}, ny)
	if err != nil {
		t.Fatal(err)
	}
	// The 23-hour day: from 00:00 EST to 23:59:59.999 EDT.
	calCheck(t, "spring", c, calOffset(2024, 3, 9, 23, 59, -5), true)
	calCheck(t, "spring", c, calOffset(2024, 3, 10, 0, 0, -5), false)
	calCheck(t, "spring", c, calOffset(2024, 3, 10, 23, 59, -4), false)
	calCheck(t, "spring", c, calOffset(2024, 3, 11, 0, 0, -4), true)
	// The 25-hour day: both passes of 01:00-02:00.
	calCheck(t, "fall", c, calOffset(2024, 11, 3, 0, 0, -4), false)
	calCheck(t, "fall", c, calOffset(2024, 11, 3, 1, 30, -4), false)
	calCheck(t, "fall", c, calOffset(2024, 11, 3, 1, 30, -5), false)
	calCheck(t, "fall", c, calOffset(2024, 11, 3, 23, 59, -5), false)
	calCheck(t, "fall", c, calOffset(2024, 11, 4, 0, 0, -5), true)

	if got := strings.Join(c.Dates(), ","); got != "2024-03-10,2024-11-03" {
		t.Errorf("Dates() = %s", got)
	}
	if _, err := NewHolidayCalendar([]string{"2024-02-30"}, nil); err == nil || !strings.Contains(err.Error(), "2024-02-30") {
		t.Errorf("2024-02-30: err = %v, want one naming the date", err)
	}
}

func TestWeeklyCalendar(t *testing.T) {
	ny := calZone(t, "America/New_York")
	def := NewWeeklyCalendar(ny)
	// Friday 2024-06-14 23:30 in New York is Saturday 03:30 UTC.
	fri := calAt(ny, 2024, 6, 14, 23, 30, 0, 0)
	calCheck(t, "default NY", def, fri, true)
	calCheck(t, "default NY", def, calAt(ny, 2024, 6, 15, 0, 0, 0, 0), false)
	calCheck(t, "default NY", def, calAt(ny, 2024, 6, 16, 23, 59, 59, 999), false)
	calCheck(t, "default NY", def, calAt(ny, 2024, 6, 17, 0, 0, 0, 0), true)
	calCheck(t, "default UTC", NewWeeklyCalendar(nil), fri, false)

	var zero WeeklyCalendar
	calCheck(t, "zero value", &zero, fri, true)

	all := &WeeklyCalendar{Excluded: [7]bool{true, true, true, true, true, true, true}}
	for d := range 7 {
		calCheck(t, "all days", all, time.Date(2024, 6, 10+d, 12, 0, 0, 0, time.UTC), false)
	}
}

func TestMonthlyCalendar(t *testing.T) {
	for _, day := range []int{0, 32, -1} {
		_, err := NewMonthlyCalendar([]int{1, day}, nil)
		if err == nil || !strings.Contains(err.Error(), "must be in the range of 1 to 31") {
			t.Errorf("day %d: err = %v, want Quartz's range message", day, err)
		}
	}
	c, err := NewMonthlyCalendar([]int{1, 31}, calZone(t, "Asia/Tokyo"))
	if err != nil {
		t.Fatal(err)
	}
	// 2024-01-31T15:00Z is February 1st in Tokyo.
	calCheck(t, "monthly", c, time.Date(2024, 1, 31, 14, 59, 0, 0, time.UTC), false)
	calCheck(t, "monthly", c, time.Date(2024, 1, 31, 15, 0, 0, 0, time.UTC), false)
	calCheck(t, "monthly", c, time.Date(2024, 2, 1, 15, 0, 0, 0, time.UTC), true)
	if err := c.SetDayExcluded(1, false); err != nil {
		t.Fatal(err)
	}
	calCheck(t, "monthly after re-including 1", c, time.Date(2024, 1, 31, 15, 0, 0, 0, time.UTC), true)
	if c.IsDayExcluded(1) || !c.IsDayExcluded(31) || c.IsDayExcluded(32) {
		t.Errorf("IsDayExcluded: 1=%v 31=%v 32=%v", c.IsDayExcluded(1), c.IsDayExcluded(31), c.IsDayExcluded(32))
	}
}

func TestAnnualCalendar(t *testing.T) {
	c, err := NewAnnualCalendar([]MonthDay{{time.December, 25}, {time.February, 29}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	calCheck(t, "annual", c, time.Date(2031, 12, 25, 8, 0, 0, 0, time.UTC), false)
	calCheck(t, "annual", c, time.Date(2031, 12, 26, 0, 0, 0, 0, time.UTC), true)
	calCheck(t, "annual", c, time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), false)
	calCheck(t, "annual", c, time.Date(2027, 2, 28, 12, 0, 0, 0, time.UTC), true)
	calCheck(t, "annual", c, time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC), true)
	if got := c.Days(); len(got) != 2 || got[0] != (MonthDay{time.February, 29}) {
		t.Errorf("Days() = %v, want Feb 29 first", got)
	}
	for _, md := range []MonthDay{{time.February, 30}, {time.April, 31}, {13, 1}, {time.January, 0}} {
		if _, err := NewAnnualCalendar([]MonthDay{md}, nil); err == nil {
			t.Errorf("%v: accepted", md)
		}
	}
}

func TestParseClockTime(t *testing.T) {
	good := map[string]ClockTime{
		"09:00":        {9, 0, 0, 0},
		"9:5":          {9, 5, 0, 0},
		"23:59:59":     {23, 59, 59, 0},
		"08:00:00:500": {8, 0, 0, 500},
		"00:00:00:999": {0, 0, 0, 999},
	}
	for s, want := range good {
		got, err := ParseClockTime(s)
		if err != nil || got != want {
			t.Errorf("ParseClockTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	bad := map[string]string{
		"24:00":         "hour",
		"25:00:00":      "hour",
		"09:60":         "minute",
		"09:00:60":      "second",
		"09:00:00:1000": "millis",
		"10":            "HH:MM",
		"1:2:3:4:5":     "HH:MM",
		"09:-1":         "not a number",
		"09:+1":         "not a number",
		"09:xx":         "not a number",
		"09::00":        "not a number",
		"09:00:00.500":  "not a number",
		"":              "HH:MM",
	}
	for s, word := range bad {
		if _, err := ParseClockTime(s); err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("ParseClockTime(%q): err = %v, want one mentioning %q", s, err, word)
		}
	}
	if s := (ClockTime{8, 0, 1, 5}).String(); s != "08:00:01:005" {
		t.Errorf("String() = %s", s)
	}
}

func TestNewDailyCalendarErrors(t *testing.T) {
	cases := []struct{ from, to, word string }{
		{"22:00", "06:00", "before the end"},
		{"09:00", "09:00", "before the end"},
		{"09:00:00:001", "09:00", "before the end"},
		{"25:00", "26:00", "range start: invalid hour"},
		{"09:00", "09:61", "range end: invalid minute"},
	}
	for _, c := range cases {
		if _, err := NewDailyCalendar(c.from, c.to, false, nil); err == nil || !strings.Contains(err.Error(), c.word) {
			t.Errorf("%s-%s: err = %v, want %q", c.from, c.to, err, c.word)
		}
	}
	if _, _, err := ParseTimeOfDayRange("09:00"); err == nil {
		t.Error("ParseTimeOfDayRange without '-' accepted")
	}
}

func TestDailyCalendar(t *testing.T) {
	c, err := NewDailyCalendar("08:00", "17:00", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	day := func(h, m, s, ms int) time.Time { return calAt(time.UTC, 2024, 6, 10, h, m, s, ms) }
	calCheck(t, "daily", c, day(7, 59, 59, 999), true)
	calCheck(t, "daily", c, day(8, 0, 0, 0), false)
	calCheck(t, "daily", c, day(17, 0, 0, 0), false)
	calCheck(t, "daily", c, day(17, 0, 0, 1), true)
	// Deliberately unlike Quartz: the day's first and last milliseconds are outside the range.
	calCheck(t, "daily", c, day(0, 0, 0, 0), true)
	calCheck(t, "daily", c, day(23, 59, 59, 999), true)

	inv, _ := NewDailyCalendar("08:00", "17:00", true, nil)
	calCheck(t, "inverted", inv, day(7, 59, 59, 999), false)
	calCheck(t, "inverted", inv, day(8, 0, 0, 0), true)
	calCheck(t, "inverted", inv, day(17, 0, 0, 0), true)
	calCheck(t, "inverted", inv, day(17, 0, 0, 1), false)
	calCheck(t, "inverted", inv, day(0, 0, 0, 0), false)

	// The range is read in the calendar's zone: 08:00-17:00 Tokyo is 23:00-08:00 UTC.
	tk, _ := NewDailyCalendar("08:00", "17:00", false, calZone(t, "Asia/Tokyo"))
	calCheck(t, "Tokyo", tk, day(7, 0, 0, 0), false)
	calCheck(t, "Tokyo", tk, day(12, 0, 0, 0), true)
}

// The New York behaviour the oracle shows (README, "DailyCalendar around DST").
func TestDailyCalendarNewYorkDST(t *testing.T) {
	ny := calZone(t, "America/New_York")
	mk := func(from, to string, invert bool) *DailyCalendar {
		c, err := NewDailyCalendar(from, to, invert, ny)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Spring gap 02:00-03:00 EST→EDT on 2024-03-10: both ends become 03:00 EDT.
	c := mk("02:00", "03:00", false)
	calCheck(t, "02:00-03:00", c, calOffset(2024, 3, 10, 1, 59, -5), true)
	calCheck(t, "02:00-03:00", c, calOffset(2024, 3, 10, 3, 0, -4), false)
	calCheck(t, "02:00-03:00", c, calOffset(2024, 3, 10, 3, 0, -4).Add(time.Millisecond), true)
	c = mk("02:15", "02:45", false)
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 10, 3, 14, -4), true)
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 10, 3, 15, -4), false)
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 10, 3, 45, -4), false)
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 10, 3, 46, -4), true)
	// On the next day the range is the ordinary 02:15-02:45 EDT.
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 11, 2, 30, -4), false)
	calCheck(t, "02:15-02:45", c, calOffset(2024, 3, 11, 3, 30, -4), true)

	// Fall overlap on 2024-11-03: the ends mean the EST pass.
	c = mk("01:00", "01:59:59", false)
	calCheck(t, "01:00-01:59:59", c, calOffset(2024, 11, 3, 1, 0, -4), true)
	calCheck(t, "01:00-01:59:59", c, calOffset(2024, 11, 3, 1, 45, -4), true)
	calCheck(t, "01:00-01:59:59", c, calOffset(2024, 11, 3, 1, 0, -5), false)
	calCheck(t, "01:00-01:59:59", c, calOffset(2024, 11, 3, 1, 45, -5), false)
	c = mk("01:30", "02:30", false)
	calCheck(t, "01:30-02:30", c, calOffset(2024, 11, 3, 1, 30, -4), true)
	calCheck(t, "01:30-02:30", c, calOffset(2024, 11, 3, 1, 15, -5), true)
	calCheck(t, "01:30-02:30", c, calOffset(2024, 11, 3, 1, 30, -5), false)
	c = mk("01:00", "02:00", true)
	calCheck(t, "inverted 01:00-02:00", c, calOffset(2024, 11, 3, 1, 30, -4), false)
	calCheck(t, "inverted 01:00-02:00", c, calOffset(2024, 11, 3, 1, 0, -5), true)
	calCheck(t, "inverted 01:00-02:00", c, calOffset(2024, 11, 3, 2, 0, -5), true)
}

func TestJavaWallTimeForCalendars(t *testing.T) {
	lh := calZone(t, "Australia/Lord_Howe")
	ny := calZone(t, "America/New_York")
	cases := []struct {
		loc      *time.Location
		y        int
		m        time.Month
		d, h, mi int
		want     string
	}{
		{ny, 2024, 3, 10, 2, 30, "2024-03-10T03:30:00-04:00"}, // gap: later by the gap
		{ny, 2024, 3, 10, 1, 59, "2024-03-10T01:59:00-05:00"},
		{ny, 2024, 3, 10, 3, 0, "2024-03-10T03:00:00-04:00"},
		{ny, 2024, 11, 3, 1, 30, "2024-11-03T01:30:00-05:00"}, // overlap: second pass
		{ny, 2024, 11, 3, 0, 59, "2024-11-03T00:59:00-04:00"},
		{ny, 2024, 11, 3, 2, 0, "2024-11-03T02:00:00-05:00"},
		{ny, 2100, 3, 14, 2, 30, "2100-03-14T03:30:00-04:00"}, // past the zone table, rule-based
		{ny, 2100, 11, 7, 1, 30, "2100-11-07T01:30:00-05:00"},
		{lh, 2024, 10, 6, 2, 15, "2024-10-06T02:45:00+11:00"}, // 30-minute gap
		{lh, 2024, 4, 7, 1, 45, "2024-04-07T01:45:00+10:30"},  // 30-minute overlap
		{lh, 2024, 4, 7, 1, 29, "2024-04-07T01:29:00+11:00"},
		{time.UTC, 2024, 6, 10, 12, 0, "2024-06-10T12:00:00Z"},
	}
	for _, c := range cases {
		got := javaWallTime(c.loc, c.y, c.m, c.d, c.h, c.mi, 0, 0).Format(time.RFC3339)
		if got != c.want {
			t.Errorf("%s %d-%02d-%02d %02d:%02d = %s, want %s", c.loc, c.y, c.m, c.d, c.h, c.mi, got, c.want)
		}
	}
	if got := javaWallTime(ny, 2024, 3, 10, 2, 30, 0, 5e8); got.Nanosecond() != 5e8 {
		t.Errorf("nanoseconds lost: %v", got)
	}
}

func TestParseCalendarSpec(t *testing.T) {
	if cal, err := ParseCalendarSpec("none", nil); cal != nil || err != nil {
		t.Errorf("none = %v, %v; want nil, nil", cal, err)
	}
	bad := map[string]string{
		"":                   "empty",
		"yearly:1":           "unknown calendar",
		"weekly:8":           "day 8",
		"weekly:-1":          "day -1",
		"weekly:x":           "not a number",
		"monthly:32":         "range of 1 to 31",
		"monthly:0":          "range of 1 to 31",
		"annual:02-30":       "exists in no year",
		"annual:0229":        "MM-DD",
		"holiday:2024-13-01": "2024-13-01",
		"daily:22:00-06:00":  "before the end",
		"daily:25:00-26:00":  "hour",
		"daily:09:00":        "FROM-TO",
		"daily":              "missing ':'",
		"weekly+":            "unknown calendar",
	}
	for spec, word := range bad {
		if _, err := ParseCalendarSpec(spec, nil); err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("%q: err = %v, want one mentioning %q", spec, err, word)
		}
	}

	cal, err := ParseCalendarSpec("holiday:2024-06-12+weekly+daily!:09:00-17:00", nil)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := cal.(*HolidayCalendar)
	if !ok {
		t.Fatalf("leftmost calendar is %T, want *HolidayCalendar", cal)
	}
	w, ok := h.Base.(*WeeklyCalendar)
	if !ok || !w.Excluded[time.Saturday] || !w.Excluded[time.Sunday] || w.Excluded[time.Monday] {
		t.Fatalf("second calendar = %#v, want the default weekly", h.Base)
	}
	if d, ok := w.Base.(*DailyCalendar); !ok || !d.Invert || d.Base != nil {
		t.Fatalf("third calendar = %#v, want an inverted daily ending the chain", w.Base)
	}

	zero, err := ParseCalendarSpec("weekly:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if zero.(*WeeklyCalendar).Excluded != [7]bool{} {
		t.Errorf("weekly:0 excludes %v, want nothing", zero.(*WeeklyCalendar).Excluded)
	}
	sun, _ := ParseCalendarSpec("weekly:1", nil)
	if ex := sun.(*WeeklyCalendar).Excluded; !ex[time.Sunday] || ex[time.Monday] {
		t.Errorf("weekly:1 excludes %v, want Sunday only", ex)
	}
}

// A chain excludes the union of its members, so every order gives the same answer.
func TestCalendarChainOrder(t *testing.T) {
	ny := calZone(t, "America/New_York")
	parts := []string{"holiday:2024-11-28,2024-03-10", "weekly:1,7", "daily:00:00-08:59:59", "monthly:15", "annual:07-04"}
	orders := [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}}
	var cals []Calendar
	for _, o := range orders {
		var specs []string
		for _, i := range o {
			specs = append(specs, parts[i])
		}
		cal, err := ParseCalendarSpec(strings.Join(specs, "+"), ny)
		if err != nil {
			t.Fatal(err)
		}
		cals = append(cals, cal)
	}
	members := make([]Calendar, len(parts))
	for i, p := range parts {
		members[i], _ = ParseCalendarSpec(p, ny)
	}
	excluded := 0
	for at := time.Date(2024, 1, 1, 0, 0, 0, 0, ny); at.Year() == 2024; at = at.Add(97 * time.Minute) {
		want := true
		for _, m := range members {
			want = want && m.Includes(at)
		}
		if !want {
			excluded++
		}
		for i, c := range cals {
			if got := c.Includes(at); got != want {
				t.Fatalf("order %v: Includes(%s) = %v, want %v", orders[i], at, got, want)
			}
		}
	}
	if excluded == 0 {
		t.Error("the chain excluded nothing")
	}
}

func TestFormatCalendarSpec(t *testing.T) {
	ny := calZone(t, "America/New_York")
	specs := map[string]string{
		"none":     "none",
		"weekly":   "weekly:1,7",
		"weekly:0": "weekly:",
		"holiday:2024-12-25,2024-06-12+weekly:2,4+monthly:31,1": "holiday:2024-06-12,2024-12-25+weekly:2,4+monthly:1,31",
		"annual:12-25,2-29":      "annual:02-29,12-25",
		"daily!:9:00-17:00:00:5": "daily!:09:00:00:000-17:00:00:005",
		"holiday:":               "holiday:",
	}
	for in, want := range specs {
		cal, err := ParseCalendarSpec(in, ny)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, err := FormatCalendarSpec(cal)
		if err != nil || got != want {
			t.Errorf("FormatCalendarSpec(%s) = %q, %v; want %q", in, got, err, want)
		}
		again, err := ParseCalendarSpec(got, ny)
		if err != nil {
			t.Errorf("%s: formatted spec %q does not parse: %v", in, got, err)
			continue
		}
		if f2, _ := FormatCalendarSpec(again); f2 != got {
			t.Errorf("%s: round trip gives %q, want %q", in, f2, got)
		}
	}
	mixed := &WeeklyCalendar{Location: ny, Base: &HolidayCalendar{}}
	if _, err := FormatCalendarSpec(mixed); err == nil || !strings.Contains(err.Error(), "mixes zones") {
		t.Errorf("mixed zones: err = %v", err)
	}
	if _, err := FormatCalendarSpec(foreignCalendar{}); err == nil {
		t.Error("a foreign Calendar was formatted")
	}
}

// foreignCalendar is a Calendar of a type this package does not define, so FormatCalendarSpec
// has no spec for it.
type foreignCalendar struct{}

func (foreignCalendar) Includes(time.Time) bool { return true }
