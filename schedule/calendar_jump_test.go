package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// refSkipExcluded is skipExcluded as it was before calendars could bound their exclusions:
// it tests every fire time. It spends at most *budget steps and reports exhausted when they
// run out, so that the comparisons below stay affordable.
func refSkipExcluded(tr *Trigger, cal Calendar, candidate, searchStart time.Time, budget *int) (next time.Time, ok, exhausted bool) {
	if cal == nil {
		return candidate, true, false
	}
	limit := searchStart.Year() + horizonYears
	for !cal.Includes(candidate) {
		if *budget--; *budget < 0 {
			return time.Time{}, false, true
		}
		next, ok := tr.Schedule.fireTimeAfter(tr, candidate)
		if !ok || next.Year() > limit {
			return time.Time{}, false, false
		}
		candidate = next
	}
	return candidate, true, false
}

// refFireTimes returns the first n fire times of tr under cal found by stepping, as
// ComputeFirst and then Triggered would find them; zero Times mark the end.
func refFireTimes(tr Trigger, cal Calendar, n, budget int) (times []time.Time, exhausted bool) {
	next, ok := tr.Schedule.firstFireTime(&tr)
	searchStart := tr.Start
	for range n {
		if ok {
			next, ok, exhausted = refSkipExcluded(&tr, cal, next, searchStart, &budget)
			if exhausted {
				return nil, true
			}
		}
		if !ok {
			next = time.Time{}
		}
		times = append(times, next)
		if next.IsZero() {
			return times, false
		}
		tr.TimesTriggered++
		searchStart = next
		next, ok = tr.Schedule.fireTimeAfter(&tr, next)
	}
	return times, false
}

// fireTimes is refFireTimes through the public API.
func fireTimes(tr Trigger, cal Calendar, n int) []time.Time {
	var times []time.Time
	if _, err := tr.ComputeFirst(cal); err != nil && !errors.Is(err, ErrNeverFires) {
		panic(err)
	}
	for range n {
		times = append(times, tr.Next)
		if tr.Next.IsZero() {
			break
		}
		tr.Triggered(cal)
	}
	return times
}

func fmtTimes(ts []time.Time) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Format(time.RFC3339Nano))
	}
	return strings.Join(s, " ")
}

func mustCal(t *testing.T, spec string, loc *time.Location) Calendar {
	t.Helper()
	cal, err := ParseCalendarSpec(spec, loc)
	if err != nil {
		t.Fatal(err)
	}
	return cal
}

func TestSkipExcludedEverything(t *testing.T) {
	var annual, monthly []string
	for d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == 2024; d = d.AddDate(0, 0, 1) {
		annual = append(annual, d.Format("01-02"))
		if d.Month() == time.January {
			monthly = append(monthly, fmt.Sprint(d.Day()))
		}
	}
	specs := []string{
		"weekly:1,2,3,4,5,6,7",
		"monthly:" + strings.Join(monthly, ","),
		"annual:" + strings.Join(annual, ","),
		"daily:00:00-23:59:59:999",
		"daily:00:00-11:59:59:999+daily:12:00-23:59:59:999", // every millisecond, only together
		"cron:* * * * * ?",
	}
	ny := mustLoad(t, "America/New_York")
	for _, spec := range specs {
		for _, loc := range []*time.Location{time.UTC, ny} {
			cal := mustCal(t, spec, loc)
			tr := Trigger{Schedule: Simple{Interval: time.Second, RepeatCount: RepeatForever},
				Start: time.Date(2024, 5, 17, 9, 30, 0, 0, time.UTC)}
			if next, err := tr.ComputeFirst(cal); !errors.Is(err, ErrNeverFires) || !tr.Next.IsZero() {
				t.Errorf("%s in %s: ComputeFirst = %v, %v; want ErrNeverFires", spec, loc, next, err)
			}
		}
	}
}

func TestSkipLongExclusions(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	jan1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	tests := []struct {
		name     string
		spec     string
		loc      *time.Location
		start    time.Time
		interval time.Duration
		want     string
		compare  bool // affordable for the stepping reference
	}{
		{"cron year", "cron:* * * * * ? 2024", nil, jan1, time.Second, "2025-01-01T00:00:00Z", false},
		{"cron year in New York", "cron:* * * * * ? 2024", ny, time.Date(2024, 1, 1, 0, 0, 0, 0, ny), time.Second, "2025-01-01T05:00:00Z", false},
		{"cron hours", "cron:* * 0-22 * * ?", nil, jan1, time.Second, "2024-01-01T23:00:00Z", true},
		{"ten years of holidays", "holiday:" + benchHolidays(2024, 10), nil, jan1, time.Second, "2034-01-01T00:00:00Z", false},
		{"ten years of holidays, hourly", "holiday:" + benchHolidays(2024, 10), nil, jan1, time.Hour, "2034-01-01T00:00:00Z", true},
		{"weekly 6 of 7", "weekly:2,3,4,5,6,7", nil, jan1, time.Second, "2024-01-07T00:00:00Z", true},
		// The only day left is Sunday 2024-03-10, when New York springs forward.
		{"weekly 6 of 7 in New York", "weekly:2,3,4,5,6,7", ny, time.Date(2024, 3, 4, 5, 0, 0, 0, time.UTC), time.Second, "2024-03-10T05:00:00Z", true},
		{"weekly with holidays", "weekly:2,3,4,5,6,7+holiday:2024-01-07,2024-01-14", nil, jan1, 7 * time.Second, "2024-01-21T00:00:06Z", true},
		{"daily inverted", "daily!:13:00:00:500-13:00:01", nil, jan1, 300 * time.Millisecond, "2024-01-01T13:00:00.6Z", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cal := mustCal(t, tt.spec, tt.loc)
			tr := Trigger{Schedule: Simple{Interval: tt.interval, RepeatCount: RepeatForever}, Start: tt.start}
			got := fireTimes(tr, cal, 2)
			if s := got[0].UTC().Format(time.RFC3339Nano); s != tt.want {
				t.Errorf("first fire %s, want %s", s, tt.want)
			}
			if !tt.compare {
				return
			}
			want, exhausted := refFireTimes(tr, cal, 2, 1e6)
			if exhausted {
				t.Fatal("the stepping reference ran out of steps")
			}
			if fmtTimes(got) != fmtTimes(want) {
				t.Errorf("fire times %s, stepping finds %s", fmtTimes(got), fmtTimes(want))
			}
		})
	}
}

// Quartz counts the slots a RESCHEDULE_NEXT_REMAINING misfire skips from the times, so the
// count must not depend on how the search reached the next fire time.
func TestMisfireCountAcrossJump(t *testing.T) {
	cal := mustCal(t, "cron:* * * * * ? 2024", nil)
	tr := Trigger{
		Schedule: Simple{Interval: time.Second, RepeatCount: RepeatForever},
		Start:    time.Date(2023, 12, 31, 0, 0, 0, 0, time.UTC),
		Misfire:  MisfireRescheduleNextRemaining,
		Next:     time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC),
	}
	tr.UpdateAfterMisfire(cal, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC))
	wantNext := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if !tr.Next.Equal(wantNext) || tr.TimesTriggered != 3600+366*86400 {
		t.Errorf("Next %s, TimesTriggered %d; want %s, %d", tr.Next, tr.TimesTriggered, wantNext, 3600+366*86400)
	}
}

func TestCalDayStart(t *testing.T) {
	tests := []struct{ zone, date, want string }{
		{"UTC", "2024-06-01", "2024-06-01T00:00:00Z"},
		{"America/New_York", "2024-03-10", "2024-03-10T00:00:00-05:00"},
		// Clocks jumped from midnight to 01:00; time.Date gives 23:00 the day before.
		{"America/Sao_Paulo", "2018-11-04", "2018-11-04T01:00:00-02:00"},
		// Clocks fell back from 01:00 to midnight; time.Date gives the second midnight.
		{"Asia/Amman", "2021-10-29", "2021-10-29T00:00:00+03:00"},
		// Go's ZoneBounds misreports the end of 2040, a leap year past the zone table.
		{"America/New_York", "2040-12-31", "2040-12-31T00:00:00-05:00"},
		{"America/New_York", "2041-01-01", "2041-01-01T00:00:00-05:00"},
	}
	for _, tt := range tests {
		d, _ := time.Parse(time.DateOnly, tt.date)
		got := calDayStart(d, mustLoad(t, tt.zone)).Format(time.RFC3339)
		if got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.zone, tt.date, got, tt.want)
		}
	}
}

var jumpZones = []string{"UTC", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Amman"}

// randCalendar returns a random calendar spec whose exclusions lie around 2024.
func randCalendar(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		var days []string
		d := time.Date(2024, time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		for range 1 + r.IntN(40) {
			days = append(days, d.Format(time.DateOnly))
			d = d.AddDate(0, 0, 1+r.IntN(2)*r.IntN(3))
		}
		return "holiday:" + strings.Join(days, ",")
	case 1:
		return "weekly:" + randSubset(r, 1, 7, 6)
	case 2:
		return "monthly:" + randSubset(r, 1, 31, 30)
	case 3:
		var days []string
		for range 1 + r.IntN(30) {
			days = append(days, fmt.Sprintf("%02d-%02d", 1+r.IntN(12), 1+r.IntN(28)))
		}
		if r.IntN(4) == 0 {
			days = append(days, "02-29")
		}
		return "annual:" + strings.Join(days, ",")
	case 4:
		a, b := r.IntN(86_400_000), r.IntN(86_400_000)
		if a == b {
			b++
		}
		kind := "daily:"
		if r.IntN(2) == 0 {
			kind = "daily!:"
		}
		return kind + randClock(min(a, b)) + "-" + randClock(max(a, b))
	}
	crons := []string{"* * * * * ?", "* * 0-20 * * ?", "* * * ? * 2-6", "* 0-40 * * * ?", "0-29 * * * * ?",
		"* * * * 1-6 ? 2024", "* * 1-2 * * ?", "* * * 1-20 * ?", "* * * LW * ?", "* * 8-17 ? * MON-FRI"}
	return "cron:" + crons[r.IntN(len(crons))]
}

func randSubset(r *rand.Rand, lo, hi, most int) string {
	var s []string
	for _, v := range r.Perm(hi - lo + 1)[:1+r.IntN(most)] {
		s = append(s, fmt.Sprint(lo+v))
	}
	return strings.Join(s, ",")
}

func randClock(ms int) string {
	return ClockTime{ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000}.String()
}

// randSchedule returns a random schedule of every kind; loc is its zone where it has one.
func randSchedule(r *rand.Rand, loc *time.Location) Schedule {
	switch r.IntN(4) {
	case 0:
		intervals := []time.Duration{time.Second, 7 * time.Second, time.Minute, 17 * time.Minute, time.Hour, 5 * time.Hour, 333 * time.Millisecond}
		return Simple{Interval: intervals[r.IntN(len(intervals))], RepeatCount: []int{RepeatForever, 50}[r.IntN(2)]}
	case 1:
		exprs := []string{"0 * * * * ?", "*/5 * * * * ?", "0 30 1 * * ?", "0 0/15 * * * ?", "0 0 2 * * ?", "0 15 10 ? * MON-FRI", "0 0 12 15W * ?", "0 0 0 L * ?"}
		c, err := ParseCron(exprs[r.IntN(len(exprs))], loc)
		if err != nil {
			panic(err)
		}
		return c
	case 2:
		units := []IntervalUnit{Second, Minute, Hour, Day, Week, Month}
		u := units[r.IntN(len(units))]
		n := 1 + r.IntN(5)
		if u <= Minute {
			n *= 13
		}
		return CalendarInterval{Interval: n, Unit: u, Location: loc, PreserveHourOfDay: r.IntN(2) == 0}
	}
	return DailyInterval{StartTimeOfDay: TimeOfDay{r.IntN(12), r.IntN(60), 0}, EndTimeOfDay: TimeOfDay{12 + r.IntN(12), r.IntN(60), r.IntN(60)},
		Interval: 1 + r.IntN(90), Unit: []IntervalUnit{Second, Minute}[r.IntN(2)], RepeatCount: RepeatForever, Location: loc}
}

// TestSkipExcludedMatchesStepping compares the first fire times of random triggers under
// random calendar chains with what stepping through every fire time finds.
func TestSkipExcludedMatchesStepping(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const cases = 1000
	compared := 0
	for i := range cases {
		loc := mustLoad(t, jumpZones[r.IntN(len(jumpZones))])
		spec := randCalendar(r)
		if r.IntN(3) == 0 {
			spec += "+" + randCalendar(r)
		}
		cal := mustCal(t, spec, loc)
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(366 * 24 * time.Hour))))
		tr := Trigger{Schedule: randSchedule(r, loc), Start: start}
		if r.IntN(4) == 0 {
			tr.End = start.Add(time.Duration(r.Int64N(int64(60 * 24 * time.Hour))))
		}
		if tr.Validate() != nil {
			continue
		}
		budget := 20_000
		if ci, ok := tr.Schedule.(CalendarInterval); ok && ci.Unit >= Day {
			budget = 500 // each step counts days from the start
		}
		want, exhausted := refFireTimes(tr, cal, 4, budget)
		if exhausted {
			continue
		}
		compared++
		if got := fireTimes(tr, cal, 4); fmtTimes(got) != fmtTimes(want) {
			t.Errorf("case %d: %+v from %s with %q in %s:\n got  %s\n want %s", i, tr.Schedule, start.Format(time.RFC3339Nano), spec, loc, fmtTimes(got), fmtTimes(want))
		}
	}
	if compared < cases*2/3 {
		t.Errorf("compared only %d of %d cases; the rest were too long to step through", compared, cases)
	}
	t.Logf("compared %d of %d cases", compared, cases)
}

// TestEarliestIncludedBounds checks each calendar's bound on its own: it is never before t,
// everything before it is excluded (sampled), and for the day and daily calendars, which bound
// exactly, the bound itself is included.
func TestEarliestIncludedBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		loc := mustLoad(t, jumpZones[r.IntN(len(jumpZones))])
		spec := randCalendar(r)
		cal := mustCal(t, spec, loc)
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(366 * 24 * time.Hour))))
		b, ok := cal.(calBounder).earliestIncluded(at)
		if !ok {
			continue // TestSkipExcludedEverything covers the calendars that include nothing
		}
		fail := func(format string, args ...any) {
			t.Errorf("case %d: %q in %s from %s, bound %s: %s", i, spec, loc, at.Format(time.RFC3339Nano), b.Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
		}
		if b.Before(at) {
			fail("before t")
			continue
		}
		if !strings.HasPrefix(spec, "cron:") && !cal.Includes(b) {
			fail("bound is excluded")
		}
		if !b.After(at) {
			continue
		}
		span := b.Sub(at)
		for _, x := range []time.Time{at, b.Add(-time.Nanosecond), b.Add(-time.Millisecond), at.Add(time.Duration(r.Int64N(int64(span))))} {
			if !x.Before(at) && cal.Includes(x) {
				fail("%s is included", x.Format(time.RFC3339Nano))
			}
		}
	}
}
