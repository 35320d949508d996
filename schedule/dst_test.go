package schedule

import (
	"testing"
	"time"
)

// The DST policies' exact fire times in New York, 2026: the clocks go forward on 03-08 at
// 02:00 EST (to 03:00 EDT) and back on 11-01 at 02:00 EDT (to 01:00 EST). The Quartz-exact
// answers for the same triggers are oracle cases ([dst-policy-quartz] in
// testdata/extra-corpus.txt); the quartz rows below repeat them so each table shows the
// difference.
func TestDSTPolicies(t *testing.T) {
	ny, err := LoadZone("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cron := func(expr string) Schedule {
		c, err := ParseCron(expr, ny)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	daily := func(from, to string, minutes int) Schedule {
		f, _ := ParseTimeOfDay(from)
		e, _ := ParseTimeOfDay(to)
		return DailyInterval{StartTimeOfDay: f, EndTimeOfDay: e, Interval: minutes, Unit: Minute,
			RepeatCount: RepeatForever, Location: ny}
	}
	springStart := time.Date(2026, 3, 7, 0, 0, 0, 0, ny)
	fallStart := time.Date(2026, 10, 31, 0, 0, 0, 0, ny)
	fallDay := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
	cases := []struct {
		name   string
		sched  Schedule
		start  time.Time
		policy DSTPolicy
		want   []string // RFC 3339 in New York
	}{
		// 02:30 does not exist on 03-08: Quartz skips it; once fires at 03:00 EDT, the first
		// instant after the gap; once_skip_gap skips it.
		{"daily 02:30, spring", cron("0 30 2 * * ?"), springStart, DSTQuartz,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
		{"daily 02:30, spring", cron("0 30 2 * * ?"), springStart, DSTOnce,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"daily 02:30, spring", cron("0 30 2 * * ?"), springStart, DSTOnceSkipGap,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
		// Four times in the gap fire once, at 03:00 EDT, under once.
		{"every 15 min of hour 2, spring", cron("0 0/15 2 * * ?"), springStart, DSTOnce,
			[]string{"2026-03-07T02:00:00-05:00", "2026-03-07T02:15:00-05:00", "2026-03-07T02:30:00-05:00",
				"2026-03-07T02:45:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"every 15 min of hour 2, spring", cron("0 0/15 2 * * ?"), springStart, DSTOnceSkipGap,
			[]string{"2026-03-07T02:00:00-05:00", "2026-03-07T02:15:00-05:00", "2026-03-07T02:30:00-05:00",
				"2026-03-07T02:45:00-05:00", "2026-03-09T02:00:00-04:00", "2026-03-09T02:15:00-04:00"}},
		// 01:30 happens twice on 11-01: Quartz fires the second (EST); once the first (EDT).
		{"daily 01:30, fall", cron("0 30 1 * * ?"), fallStart, DSTQuartz,
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
		{"daily 01:30, fall", cron("0 30 1 * * ?"), fallStart, DSTOnce,
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"daily 01:30, fall", cron("0 30 1 * * ?"), fallStart, DSTOnceSkipGap,
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		// Hourly: Quartz loses 01:00 EDT and fires 01:00 EST; once fires 01:00 EDT and not
		// its repeat, so every local hour fires exactly once.
		{"hourly, fall", cron("0 0 * * * ?"), fallDay, DSTQuartz,
			[]string{"2026-11-01T00:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00",
				"2026-11-01T03:00:00-05:00", "2026-11-01T04:00:00-05:00"}},
		{"hourly, fall", cron("0 0 * * * ?"), fallDay, DSTOnce,
			[]string{"2026-11-01T00:00:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00",
				"2026-11-01T03:00:00-05:00", "2026-11-01T04:00:00-05:00"}},
		{"every 30 min of hour 1, fall", cron("0 0/30 1 * * ?"), fallDay, DSTOnce,
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:00:00-05:00",
				"2026-11-02T01:30:00-05:00"}},
		// Daily interval 01:00–02:00 every 30 min: Quartz fires the window's EST pass; once the
		// first pass of 01:00 and 01:30, then 02:00 (which exists once).
		{"daily interval 01:00-02:00, fall", daily("01:00:00", "02:00:00", 30), fallDay, DSTQuartz,
			[]string{"2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00", "2026-11-02T01:00:00-05:00"}},
		{"daily interval 01:00-02:00, fall", daily("01:00:00", "02:00:00", 30), fallDay, DSTOnce,
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-02T01:00:00-05:00"}},
		// Daily interval 02:00–04:00 on 03-08: the gap's slots fire once at 03:00 (once) or not.
		{"daily interval 02:00-04:00, spring", daily("02:00:00", "04:00:00", 30), time.Date(2026, 3, 8, 0, 0, 0, 0, ny), DSTOnce,
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-08T04:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"daily interval 02:00-04:00, spring", daily("02:00:00", "04:00:00", 30), time.Date(2026, 3, 8, 0, 0, 0, 0, ny), DSTOnceSkipGap,
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-08T04:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		// A calendar interval of a day from 02:30: Quartz drifts to 01:30 through the gap;
		// once keeps 02:30 on the local clock and fires the gap day at 03:00.
		{"every day from 02:30, spring", CalendarInterval{Interval: 1, Unit: Day, Location: ny},
			time.Date(2026, 3, 7, 2, 30, 0, 0, ny), DSTQuartz,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-09T01:30:00-04:00"}},
		{"every day from 02:30, spring", CalendarInterval{Interval: 1, Unit: Day, Location: ny},
			time.Date(2026, 3, 7, 2, 30, 0, 0, ny), DSTOnce,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"every day from 02:30, spring", CalendarInterval{Interval: 1, Unit: Day, Location: ny},
			time.Date(2026, 3, 7, 2, 30, 0, 0, ny), DSTOnceSkipGap,
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.policy.String(), func(t *testing.T) {
			s, err := WithDST(c.sched, c.policy)
			if err != nil {
				t.Fatal(err)
			}
			tr := &Trigger{Schedule: s, Start: c.start}
			if err := tr.Validate(); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.ComputeFirst(nil); err != nil {
				t.Fatal(err)
			}
			var got []string
			for range c.want {
				got = append(got, tr.Next.In(ny).Format(time.RFC3339))
				tr.Triggered(nil)
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Fatalf("fires\n got %v\nwant %v", got, c.want)
				}
			}
			if DSTOf(s) != c.policy {
				t.Errorf("DSTOf = %s, want %s", DSTOf(s), c.policy)
			}
		})
	}
}

// The policies keep the stored form: a wrapped schedule encodes as the schedule it wraps.
func TestDSTPolicyEncodesAsItsSchedule(t *testing.T) {
	ny, _ := LoadZone("America/New_York")
	c, _ := ParseCron("0 30 2 * * ?", ny)
	s, err := WithDST(c, DSTOnce)
	if err != nil {
		t.Fatal(err)
	}
	if EncodeSpec(s) != EncodeSpec(c) || LocationOf(s) != ny {
		t.Errorf("wrapped: spec %s, zone %v; want %s, %v", EncodeSpec(s), LocationOf(s), EncodeSpec(c), ny)
	}
	if _, err := WithDST(Simple{Interval: time.Hour, RepeatCount: RepeatForever}, DSTOnce); err == nil {
		t.Error("a simple schedule took a DST policy")
	}
	for _, name := range []string{"", "quartz", "once", "once_skip_gap"} {
		if _, err := ParseDSTPolicy(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := ParseDSTPolicy("twice"); err == nil {
		t.Error(`"twice" parsed`)
	}
}

func TestResolveAndDSTMark(t *testing.T) {
	ny, _ := LoadZone("America/New_York")
	lh, _ := LoadZone("Australia/Lord_Howe") // 30-minute changes: 02:00 -> 02:30 in October, back in April
	wall := func(s string) time.Time {
		w, err := time.Parse("2006-01-02T15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, c := range []struct {
		loc  *time.Location
		wall string
		want string
		kind WallKind
	}{
		{ny, "2026-03-08T02:30:00", "2026-03-08T03:00:00-04:00", WallGap},
		{ny, "2026-03-08T01:59:59", "2026-03-08T01:59:59-05:00", WallNormal},
		{ny, "2026-03-08T03:00:00", "2026-03-08T03:00:00-04:00", WallNormal},
		{ny, "2026-11-01T01:30:00", "2026-11-01T01:30:00-04:00", WallOverlap},
		{ny, "2026-11-01T01:00:00", "2026-11-01T01:00:00-04:00", WallOverlap},
		{ny, "2026-11-01T02:00:00", "2026-11-01T02:00:00-05:00", WallNormal},
		{lh, "2026-10-04T02:15:00", "2026-10-04T02:30:00+11:00", WallGap},
		{lh, "2026-04-05T01:45:00", "2026-04-05T01:45:00+11:00", WallOverlap},
	} {
		got, kind := Resolve(wall(c.wall), c.loc)
		if got.Format(time.RFC3339) != c.want || kind != c.kind {
			t.Errorf("Resolve(%s, %s) = %s %v, want %s %v", c.wall, c.loc, got.Format(time.RFC3339), kind, c.want, c.kind)
		}
	}
	at := func(s string) time.Time {
		x, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct{ at, want string }{
		{"2026-03-08T03:00:00-04:00", "gap"},
		{"2026-03-08T03:59:59-04:00", "gap"},
		{"2026-03-08T04:00:00-04:00", ""},
		{"2026-03-08T01:59:00-05:00", ""},
		{"2026-11-01T00:59:59-04:00", ""},
		{"2026-11-01T01:00:00-04:00", "overlap"},
		{"2026-11-01T01:30:00-05:00", "overlap"},
		{"2026-11-01T02:00:00-05:00", ""},
		{"2026-07-01T12:00:00-04:00", ""},
	} {
		if got := DSTMark(at(c.at), ny); got != c.want {
			t.Errorf("DSTMark(%s) = %q, want %q", c.at, got, c.want)
		}
	}
	if DSTMark(at("2026-03-08T03:00:00-04:00"), nil) != "" {
		t.Error("a simple schedule's fire got a DST mark")
	}
}

// The offset is the same for the same (trigger, scheduled time), below the maximum, and
// spread: two triggers at one instant, and one trigger's successive fires, get different
// offsets. The exact values pin the hash, which every node of a cluster must agree on.
func TestJitterOffset(t *testing.T) {
	at := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	max := 10 * time.Minute
	got := []time.Duration{JitterOffset(1, at, max), JitterOffset(2, at, max), JitterOffset(1, at.Add(time.Hour), max)}
	want := []time.Duration{566736 * time.Millisecond, 156729 * time.Millisecond, 47520 * time.Millisecond}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("offsets %v, want %v", got, want)
			break
		}
	}
	if JitterOffset(1, at, max) != got[0] {
		t.Error("the offset changed between two calls")
	}
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		o := JitterOffset(int64(i), at, max)
		if o < 0 || o >= max || o%time.Millisecond != 0 {
			t.Fatalf("offset %v out of [0, %v) or not whole ms", o, max)
		}
		seen[o] = true
	}
	if len(seen) < 990 {
		t.Errorf("1000 triggers got only %d distinct offsets", len(seen))
	}
	if JitterOffset(1, at, 0) != 0 || JitterOffset(1, at, -time.Second) != 0 {
		t.Error("no jitter gave an offset")
	}
	if ValidateJitter(MaxJitter.Milliseconds()+1) == nil || ValidateJitter(-1) == nil || ValidateJitter(MaxJitter.Milliseconds()) != nil {
		t.Error("jitter bounds")
	}
}
