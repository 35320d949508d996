package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestJavaWallTime(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	lh := mustLoad(t, "Australia/Lord_Howe")
	tests := []struct {
		name string
		loc  *time.Location
		y    int
		m    time.Month
		d, h int
		min  int
		want string
	}{
		{"gap moves forward by the gap", ny, 2024, 3, 10, 2, 30, "2024-03-10T03:30:00-04:00"},
		{"gap start", ny, 2024, 3, 10, 2, 0, "2024-03-10T03:00:00-04:00"},
		{"overlap takes the second (standard) pass", ny, 2024, 11, 3, 1, 30, "2024-11-03T01:30:00-05:00"},
		{"overlap start", ny, 2024, 11, 3, 1, 0, "2024-11-03T01:00:00-05:00"},
		{"just before the overlap", ny, 2024, 11, 3, 0, 59, "2024-11-03T00:59:00-04:00"},
		{"thirty-minute gap", lh, 2024, 10, 6, 2, 15, "2024-10-06T02:45:00+11:00"},
		{"thirty-minute overlap", lh, 2024, 4, 7, 1, 45, "2024-04-07T01:45:00+10:30"},
		{"beyond the tz table", ny, 2040, 3, 11, 2, 30, "2040-03-11T03:30:00-04:00"},
		{"ordinary", ny, 2024, 6, 1, 12, 0, "2024-06-01T12:00:00-04:00"},
	}
	for _, tt := range tests {
		got := javaWallTime(tt.loc, tt.y, tt.m, tt.d, tt.h, tt.min, 0, 0).Format(time.RFC3339)
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestJavaAddDays(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	tests := []struct {
		name, from string
		days       int
		want       string
	}{
		{"into the gap moves back", "2024-03-09T02:30:00-05:00", 1, "2024-03-10T01:30:00-05:00"},
		{"across the gap keeps the wall time", "2024-03-09T12:00:00-05:00", 2, "2024-03-11T12:00:00-04:00"},
		{"into the overlap keeps daylight time", "2024-11-02T01:30:00-04:00", 1, "2024-11-03T01:30:00-04:00"},
		{"out of the overlap", "2024-11-03T01:30:00-05:00", 1, "2024-11-04T01:30:00-05:00"},
	}
	for _, tt := range tests {
		from, err := time.Parse(time.RFC3339, tt.from)
		if err != nil {
			t.Fatal(err)
		}
		got := javaAddDays(from.In(ny), tt.days).Format(time.RFC3339)
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestJavaAddMonthsClamps(t *testing.T) {
	start := time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)
	got := javaAddMonths(javaAddMonths(start, 1), 1)
	if want := time.Date(2024, 3, 29, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Jan 31 + 1 month + 1 month = %v, want %v", got, want)
	}
	if got := javaAddMonths(start, -2); !got.Equal(time.Date(2023, 11, 30, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("Jan 31 - 2 months = %v, want 2023-11-30", got)
	}
}

func TestIntervalUnitParse(t *testing.T) {
	for u := Second; u <= Year; u++ {
		for _, s := range []string{u.String(), strings.ToLower(u.String())} {
			got, err := ParseIntervalUnit(s)
			if err != nil || got != u {
				t.Errorf("ParseIntervalUnit(%q) = %v, %v; want %v", s, got, err, u)
			}
		}
	}
	// Quartz accepts MILLISECOND for a calendar interval and then throws NullPointerException
	// computing the first fire after the start; Sundial has no such unit.
	for _, s := range []string{"MILLISECOND", "FORTNIGHT", ""} {
		if _, err := ParseIntervalUnit(s); err == nil {
			t.Errorf("ParseIntervalUnit(%q) succeeded", s)
		}
	}
}

func TestParseTimeOfDay(t *testing.T) {
	if got, err := ParseTimeOfDay("09:05:30"); err != nil || got != (TimeOfDay{9, 5, 30}) {
		t.Errorf("ParseTimeOfDay(09:05:30) = %v, %v", got, err)
	}
	for s, want := range map[string]string{
		"24:00:00": "hour", "12:60:00": "minute", "12:00:60": "second",
		"9am": "HH:MM:SS", "12:00": "HH:MM:SS", "-1:00:00": "HH:MM:SS", "12::00": "HH:MM:SS",
	} {
		_, err := ParseTimeOfDay(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTimeOfDay(%q) error %v, want one mentioning %q", s, err, want)
		}
	}
}

func TestQuartzDayOfWeek(t *testing.T) {
	for n, want := range map[int]time.Weekday{1: time.Sunday, 2: time.Monday, 7: time.Saturday} {
		if got, err := QuartzDayOfWeek(n); err != nil || got != want {
			t.Errorf("QuartzDayOfWeek(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
	for _, n := range []int{0, 8, -1} {
		if _, err := QuartzDayOfWeek(n); err == nil {
			t.Errorf("QuartzDayOfWeek(%d) succeeded", n)
		}
	}
}

func TestIntervalValidate(t *testing.T) {
	start := time.Date(2024, 6, 10, 9, 0, 0, 0, time.UTC)
	daily := func(f func(*DailyInterval)) Schedule {
		d := DailyInterval{StartTimeOfDay: TimeOfDay{9, 0, 0}, EndTimeOfDay: TimeOfDay{17, 0, 0},
			Interval: 1, Unit: Hour, RepeatCount: RepeatForever}
		f(&d)
		return d
	}
	tests := []struct {
		name  string
		sched Schedule
		want  []string // substrings of the error; nil means valid
	}{
		{"one-shot simple", Simple{}, nil},
		{"simple forever", Simple{Interval: time.Minute, RepeatCount: RepeatForever}, nil},
		{"simple zero interval", Simple{RepeatCount: 5}, []string{"Interval", "at least 1 ms"}},
		{"simple negative interval", Simple{Interval: -time.Second}, []string{"Interval", "negative"}},
		{"simple repeat count", Simple{Interval: time.Second, RepeatCount: -2}, []string{"RepeatCount", "count of repeats"}},
		{"calint ok", CalendarInterval{Interval: 1, Unit: Month}, nil},
		{"calint zero interval", CalendarInterval{Unit: Day}, []string{"Interval", "at least 1"}},
		{"calint negative interval", CalendarInterval{Interval: -1, Unit: Day}, []string{"Interval", "at least 1"}},
		{"calint no unit", CalendarInterval{Interval: 1}, []string{"Unit"}},
		{"daily ok", daily(func(*DailyInterval) {}), nil},
		{"daily equal window", daily(func(d *DailyInterval) { d.EndTimeOfDay = d.StartTimeOfDay }), nil},
		{"daily day unit", daily(func(d *DailyInterval) { d.Unit = Day }), []string{"Unit", "SECOND, MINUTE or HOUR"}},
		{"daily zero interval", daily(func(d *DailyInterval) { d.Interval = 0 }), []string{"Interval", "at least 1"}},
		{"daily 25 hours", daily(func(d *DailyInterval) { d.Interval = 25 }), []string{"Interval", "exceeds 24 hours"}},
		{"daily 86401 seconds", daily(func(d *DailyInterval) { d.Interval, d.Unit = 86401, Second }), []string{"exceeds 24 hours"}},
		{"daily 86400 seconds", daily(func(d *DailyInterval) { d.Interval, d.Unit = 86400, Second }), nil},
		{"daily reversed window", daily(func(d *DailyInterval) { d.StartTimeOfDay = TimeOfDay{18, 0, 0} }),
			[]string{"EndTimeOfDay 17:00:00 is before StartTimeOfDay 18:00:00"}},
		{"daily bad hour", daily(func(d *DailyInterval) { d.EndTimeOfDay = TimeOfDay{24, 0, 0} }),
			[]string{"EndTimeOfDay", "hour must be 0 to 23"}},
		{"daily bad weekday", daily(func(d *DailyInterval) { d.Days = []time.Weekday{time.Monday, 7} }),
			[]string{"Days", "7 is not a weekday"}},
		{"daily repeat count", daily(func(d *DailyInterval) { d.RepeatCount = -3 }), []string{"RepeatCount"}},
	}
	for _, tt := range tests {
		tr := &Trigger{Schedule: tt.sched, Start: start}
		err := tr.Validate()
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s: no error, want one mentioning %q", tt.name, tt.want)
		case err != nil:
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not mention %q", tt.name, err, w)
				}
			}
		}
	}
}

// The misfire policies that only a simple trigger has are rejected for the others.
func TestIntervalMisfirePolicies(t *testing.T) {
	start := time.Date(2024, 6, 10, 9, 0, 0, 0, time.UTC)
	tr := &Trigger{Schedule: CalendarInterval{Interval: 1, Unit: Day}, Start: start, Misfire: MisfireRescheduleNextExisting}
	if err := tr.Validate(); err == nil {
		t.Error("calendar interval with reschedule_next_existing validated")
	}
	tr = &Trigger{Schedule: Simple{}, Start: start, Misfire: MisfireDoNothing}
	if err := tr.Validate(); err == nil {
		t.Error("simple with do_nothing validated")
	}
}

// A misfire that rewrites the repeat count replaces the trigger's Simple schedule, and the
// trigger then ends where the new count says.
func TestSimpleMisfireRewritesRepeatCount(t *testing.T) {
	start := time.Date(2024, 6, 10, 12, 0, 0, 0, time.UTC)
	tr := &Trigger{Schedule: Simple{Interval: time.Minute, RepeatCount: 10}, Start: start,
		Misfire: MisfireRescheduleNowRemaining}
	if _, err := tr.ComputeFirst(nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tr.Triggered(nil)
	}
	// 12:03 is pending; Quartz counts the whole intervals from it to now (2) as missed.
	now := start.Add(5*time.Minute + 30*time.Second)
	tr.UpdateAfterMisfire(nil, now)
	s := tr.Schedule.(Simple)
	if s.RepeatCount != 5 || tr.TimesTriggered != 0 || !tr.Start.Equal(now) || !tr.Next.Equal(now) {
		t.Fatalf("after misfire: RepeatCount %d TimesTriggered %d Start %v Next %v; want 5, 0, now, now",
			s.RepeatCount, tr.TimesTriggered, tr.Start, tr.Next)
	}
	fires := 0
	for !tr.Next.IsZero() {
		fires++
		tr.Triggered(nil)
	}
	if fires != 6 {
		t.Errorf("fired %d times after the misfire, want 6 (now plus 5 repeats)", fires)
	}
}

// A daily-interval repeat count caps the fires over the trigger's life, across days.
func TestDailyRepeatCountIsLifetime(t *testing.T) {
	tr := &Trigger{
		Schedule: DailyInterval{StartTimeOfDay: TimeOfDay{9, 0, 0}, EndTimeOfDay: TimeOfDay{10, 0, 0},
			Interval: 30, Unit: Minute, RepeatCount: 4},
		Start: time.Date(2024, 6, 10, 0, 0, 0, 0, time.UTC),
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ComputeFirst(nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for !tr.Next.IsZero() && len(got) < 10 {
		got = append(got, tr.Next.Format("01-02 15:04"))
		tr.Triggered(nil)
	}
	want := "06-10 09:00 06-10 09:30 06-10 10:00 06-11 09:00 06-11 09:30"
	if strings.Join(got, " ") != want {
		t.Errorf("fires %v, want %s", got, want)
	}
}

// An unvalidated repeating Simple with no interval must not divide by zero.
func TestSimpleZeroIntervalUnvalidated(t *testing.T) {
	start := time.Date(2024, 6, 10, 0, 0, 0, 0, time.UTC)
	tr := &Trigger{Schedule: Simple{RepeatCount: 3}, Start: start}
	if next, ok := tr.FireTimeAfter(start); ok {
		t.Errorf("FireTimeAfter = %v, want none", next)
	}
}
