package schedule

import (
	"slices"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestDataIntervalPerKind steps a trigger of each kind through its first fires and checks
// each fire's data interval: from the trigger's start for the first, then from the fire
// before.
func TestDataIntervalPerKind(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	hourly, err := ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		s     Schedule
		start string
		want  [][2]string // start, end of each fire's interval
	}{
		{"cron hourly", hourly, "2026-03-01T00:30:00Z", [][2]string{
			{"2026-03-01T00:30:00Z", "2026-03-01T01:00:00Z"},
			{"2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z"},
			{"2026-03-01T02:00:00Z", "2026-03-01T03:00:00Z"}}},
		{"simple every 15 minutes", Simple{Interval: 15 * time.Minute, RepeatCount: RepeatForever}, "2026-03-01T10:00:00Z", [][2]string{
			{"2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z"},
			{"2026-03-01T10:00:00Z", "2026-03-01T10:15:00Z"},
			{"2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"}}},
		// Daily at noon New York time across the spring-forward change (2026-03-08): the
		// interval spanning the change is 23 hours long.
		{"calendar interval daily over DST", CalendarInterval{Interval: 1, Unit: Day, Location: ny}, "2026-03-07T17:00:00Z", [][2]string{
			{"2026-03-07T17:00:00Z", "2026-03-07T17:00:00Z"},
			{"2026-03-07T17:00:00Z", "2026-03-08T16:00:00Z"},
			{"2026-03-08T16:00:00Z", "2026-03-09T16:00:00Z"}}},
		{"daily interval 09:00-10:00 every 30 minutes", DailyInterval{StartTimeOfDay: TimeOfDay{Hour: 9}, EndTimeOfDay: TimeOfDay{Hour: 10},
			Interval: 30, Unit: Minute, RepeatCount: RepeatForever}, "2026-03-02T00:00:00Z", [][2]string{
			{"2026-03-02T00:00:00Z", "2026-03-02T09:00:00Z"},
			{"2026-03-02T09:00:00Z", "2026-03-02T09:30:00Z"},
			{"2026-03-02T09:30:00Z", "2026-03-02T10:00:00Z"},
			{"2026-03-02T10:00:00Z", "2026-03-03T09:00:00Z"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Trigger{Schedule: c.s, Start: at(c.start)}
			if _, err := tr.ComputeFirst(nil); err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				got := [2]string{tr.IntervalStart().UTC().Format(time.RFC3339), tr.Next.UTC().Format(time.RFC3339)}
				if got != w {
					t.Errorf("fire %d: interval %v, want %v", i, got, w)
				}
				tr.Triggered(nil)
			}
		})
	}
}

// TestCoalesce checks the coalesced catch-up: one interval from the start of the first
// missed interval to the last missed time, the trigger moved past now, and nothing done
// for a trigger that is not later than its window.
func TestCoalesce(t *testing.T) {
	hourly, err := ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, prev, next, now string
		window                time.Duration
		ok                    bool
		ivStart, ivEnd        string
		after                 string // the trigger's next fire after
		fired                 int    // fires counted as fired
	}{
		{"four missed hours", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T05:30:00Z", time.Minute,
			true, "2026-03-01T01:00:00Z", "2026-03-01T05:00:00Z", "2026-03-01T06:00:00Z", 4},
		{"a missed time exactly at now is covered", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T05:00:00Z", time.Minute,
			true, "2026-03-01T01:00:00Z", "2026-03-01T05:00:00Z", "2026-03-01T06:00:00Z", 4},
		{"first fire ever missed: from the start", "", "2026-03-01T01:00:00Z", "2026-03-01T03:10:00Z", time.Minute,
			true, "2026-03-01T00:30:00Z", "2026-03-01T03:00:00Z", "2026-03-01T04:00:00Z", 3},
		{"within the cluster threshold", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T02:00:30Z", time.Minute,
			false, "", "", "2026-03-01T02:00:00Z", 0},
		{"within a per-trigger window of an hour", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T02:30:00Z", time.Hour,
			false, "", "", "2026-03-01T02:00:00Z", 0},
		{"past a per-trigger window of ten minutes", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T02:30:00Z", 10 * time.Minute,
			true, "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T03:00:00Z", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Trigger{Schedule: hourly, Start: at("2026-03-01T00:30:00Z"), Next: at(c.next)}
			if c.prev != "" {
				tr.Prev = at(c.prev)
			}
			iv, ok := tr.Coalesce(nil, at(c.now), c.window)
			if ok != c.ok {
				t.Fatalf("coalesced %v, want %v", ok, c.ok)
			}
			if ok && (!iv.Start.Equal(at(c.ivStart)) || !iv.End.Equal(at(c.ivEnd))) {
				t.Errorf("interval [%s, %s], want [%s, %s]", iv.Start.Format(time.RFC3339), iv.End.Format(time.RFC3339), c.ivStart, c.ivEnd)
			}
			if !tr.Next.Equal(at(c.after)) || tr.TimesTriggered != c.fired {
				t.Errorf("trigger next %s after %d fires, want %s after %d", tr.Next.Format(time.RFC3339), tr.TimesTriggered, c.after, c.fired)
			}
			if ok && !tr.Prev.Equal(iv.End) {
				t.Errorf("prev %s, want the last missed time %s: the next run's interval must start there", tr.Prev, iv.End)
			}
		})
	}
}

// TestFireTimesIn checks the scheduled times a backfill covers and the time before them,
// with a calendar excluding some and a range starting between fire times.
func TestFireTimesIn(t *testing.T) {
	every6h, err := ParseCron("0 0 0/6 * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	noNoon := calFunc(func(t time.Time) bool { return t.Hour() != 12 })
	for _, c := range []struct {
		name, start, from, to string
		cal                   Calendar
		max                   int
		want                  []string
		before                string
	}{
		{"a day", "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-01T23:59:59Z", nil, 100,
			[]string{"2026-03-01T00:00:00Z", "2026-03-01T06:00:00Z", "2026-03-01T12:00:00Z", "2026-03-01T18:00:00Z"}, "2026-02-28T18:00:00Z"},
		{"calendar excludes noon, range from 05:00 to 2 March 00:00 inclusive", "2026-01-01T00:00:00Z", "2026-03-01T05:00:00Z", "2026-03-02T00:00:00Z", noNoon, 100,
			[]string{"2026-03-01T06:00:00Z", "2026-03-01T18:00:00Z", "2026-03-02T00:00:00Z"}, "2026-03-01T00:00:00Z"},
		{"capped", "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-09T00:00:00Z", nil, 2,
			[]string{"2026-03-01T00:00:00Z", "2026-03-01T06:00:00Z"}, "2026-02-28T18:00:00Z"},
		{"a cron range before the trigger's start: cron is not anchored to it", "2026-11-27T08:00:00Z", "2026-03-01T00:00:00Z", "2026-03-01T13:00:00Z", nil, 100,
			[]string{"2026-03-01T00:00:00Z", "2026-03-01T06:00:00Z", "2026-03-01T12:00:00Z"}, "2026-02-28T18:00:00Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Trigger{Schedule: every6h, Start: at(c.start), TimesTriggered: 7, Prev: at("2026-05-01T00:00:00Z")}
			times, before := tr.FireTimesIn(c.cal, at(c.from), at(c.to), c.max)
			var got []string
			for _, x := range times {
				got = append(got, x.UTC().Format(time.RFC3339))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("times %v, want %v", got, c.want)
			}
			gotBefore := ""
			if !before.IsZero() {
				gotBefore = before.UTC().Format(time.RFC3339)
			}
			if gotBefore != c.before {
				t.Errorf("before %q, want %q", gotBefore, c.before)
			}
		})
	}
}

// TestFireTimesInAnchored checks that a simple trigger, whose times count from its start,
// has none before it.
func TestFireTimesInAnchored(t *testing.T) {
	tr := &Trigger{Schedule: Simple{Interval: 6 * time.Hour, RepeatCount: RepeatForever}, Start: at("2026-03-01T06:00:00Z")}
	times, before := tr.FireTimesIn(nil, at("2026-03-01T00:00:00Z"), at("2026-03-01T13:00:00Z"), 100)
	if len(times) != 2 || !times[0].Equal(at("2026-03-01T06:00:00Z")) || !times[1].Equal(at("2026-03-01T12:00:00Z")) || !before.IsZero() {
		t.Errorf("times %v, before %v; want 06:00 and 12:00, none before", times, before)
	}
}

type calFunc func(time.Time) bool

func (f calFunc) Includes(t time.Time) bool { return f(t) }
