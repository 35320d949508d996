package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseCronWarnings(t *testing.T) {
	tests := []struct {
		expr string
		want string // substring of one warning; "" means no warnings
	}{
		{"0 0 12 * * ?", ""},
		{"0 15 10 ? * MON-FRI", ""},
		{"0 0 12 L * ?", ""},
		{"0 0 12 ? * MONDAY", `"DAY" after "MON" is ignored`},
		{"0 0 12 ? * MON/2", `"/2" after "MON" is ignored`},
		{"0 0 12 1 JAN/2 ?", `"/2" after "JAN" is ignored`},
		{"0 0 12 1-5W * ?", `"W" after "1-5" is ignored`},
		{"0 0 0 ? * 2-6#1", `"#1" after "2-6" is ignored`},
		{"0 0 12 ?X * *", `"X" after "?" is ignored`},
		{"0 0 12 1,,2 * ?", "empty list items"},
		{"0 0 0 L-0 * ?", "offset 0"},
		{"0 0 0 ? * FRIL", "read as 6L"},
		{"0 0 12 * * ? L", "never fires"},
		{"0 0 12 * * ? 2024 extra", `"extra" after the year field is ignored`},
		{"*/0 * * * * ?", "read as 1"},
		{"0 0 0 5W,10 * ?", "only the smallest day, 5W"},
		{"99 0 0 * * ?", "internal marker"},
		{"5X 0 0 * * ?", `"X" after "5" is ignored`},
	}
	for _, tt := range tests {
		c, err := ParseCron(tt.expr, nil)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", tt.expr, err)
			continue
		}
		w := c.Warnings()
		if tt.want == "" {
			if len(w) != 0 {
				t.Errorf("ParseCron(%q) warnings = %q, want none", tt.expr, w)
			}
			continue
		}
		if !strings.Contains(strings.Join(w, "\n"), tt.want) {
			t.Errorf("ParseCron(%q) warnings = %q, want one containing %q", tt.expr, w, tt.want)
		}
	}
}

func TestParseCronErrors(t *testing.T) {
	tests := []struct {
		expr  string
		field string
		pos   int
	}{
		{"0 0 12 * *", "expression", 10},
		{"60 0 12 * * ?", "seconds", 0},
		{"0 60 12 * * ?", "minutes", 2},
		{"0 0 24 * * ?", "hours", 4},
		{"0 0 12 32 * ?", "day-of-month", 7},
		{"0 0 12 ? 13 *", "month", 9},
		{"0 0 12 ? FOO *", "month", 9},
		{"0 0 12 ? * 8", "day-of-week", 11},
		{"0 0 12 ? * MON#6", "day-of-week", 15},
		{"0 0 12 * * *", "day-of-week", 11},
		{"0 0 12 ? * ?", "day-of-week", 11},
		{"0 0 12 L-31 * ?", "day-of-month", 9},
		{"0 0 12 32W * ?", "day-of-month", 9},
		{"0 0 12 ? * 1L,2L", "day-of-week", 11},
		{"0 0 12 L,15 * ?", "day-of-month", 7},
		{"0/61 * * * * ?", "seconds", 2},
		{"0 0 12 * * ? 2024-2023", "year", 13},
		{"0 0 12 ? * 1,JAN", "day-of-week", 13},
		{"a b c d e f", "seconds", 0},
		{"L 0 0 * * ?", "seconds", 0},
		{"0 0 0 0W * ?", "day-of-month", 6},
		{"  0 0 12 ?é * MON-", "day-of-week", 19},
	}
	for _, tt := range tests {
		_, err := ParseCron(tt.expr, nil)
		var ce *CronError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCron(%q) error = %v, want a *CronError", tt.expr, err)
			continue
		}
		if ce.Field != tt.field || ce.Pos != tt.pos {
			t.Errorf("ParseCron(%q) = field %q pos %d (%v), want field %q pos %d", tt.expr, ce.Field, ce.Pos, ce, tt.field, tt.pos)
		}
		if msg := ce.Error(); !strings.Contains(msg, ce.Field) || !strings.Contains(msg, ce.Msg) {
			t.Errorf("Error() = %q does not name field and message", msg)
		}
	}
}

func TestCronStringReparses(t *testing.T) {
	tests := map[string]string{
		"0 0 12 * * ?":                    "0 0 12 * * ?",
		"0\t15  10 ? * mon-fri":           "0 15 10 ? * MON-FRI",
		"0 0 12 * * ? 2024 extra-ignored": "0 0 12 * * ? 2024",
	}
	for in, want := range tests {
		c, err := ParseCron(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.String(); got != want {
			t.Errorf("ParseCron(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestCronLocation(t *testing.T) {
	c, err := ParseCron("0 0 12 * * ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Location() != time.UTC {
		t.Errorf("nil location: got %v, want UTC", c.Location())
	}
	ny := cronLoad(t, "America/New_York")
	c, _ = ParseCron("0 0 12 * * ?", ny)
	next, ok := c.Next(time.Date(2024, 6, 1, 0, 0, 0, 0, ny))
	if !ok || next.Location() != ny || !next.Equal(time.Date(2024, 6, 1, 12, 0, 0, 0, ny)) {
		t.Errorf("Next = %v %v, want 2024-06-01 12:00 New York", next, ok)
	}
}

func cronLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestCronNextNever(t *testing.T) {
	c, err := ParseCron("0 0 0 30 2 ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if next, ok := c.Next(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Errorf("Next = %v, want none", next)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("giving up took %v", d)
	}
	// Within the horizon a rare schedule is still found.
	c, _ = ParseCron("0 0 0 29 2 ? 2096", nil)
	if next, ok := c.Next(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)); !ok || next.Year() != 2096 {
		t.Errorf("Next = %v %v, want 2096-02-29", next, ok)
	}
}

// TestCronMatches pins isSatisfiedBy, including the repeated hour: Quartz re-reads the instant
// through its wall fields, so 01:30 EDT matches because 01:30 EST does.
func TestCronMatches(t *testing.T) {
	ny := cronLoad(t, "America/New_York")
	c, err := ParseCron("0 30 1 * * ?", ny)
	if err != nil {
		t.Fatal(err)
	}
	edt := time.Date(2024, 11, 3, 5, 30, 0, 0, time.UTC) // 01:30 EDT
	est := time.Date(2024, 11, 3, 6, 30, 0, 0, time.UTC) // 01:30 EST
	for _, tt := range []struct {
		t    time.Time
		want bool
	}{
		{edt, true},
		{est, true},
		{est.Add(400 * time.Millisecond), true},
		{est.Add(time.Second), false},
		{time.Date(2024, 11, 4, 6, 30, 0, 0, time.UTC), true},
		{time.Date(2024, 11, 4, 7, 30, 0, 0, time.UTC), false},
	} {
		if got := c.Matches(tt.t); got != tt.want {
			t.Errorf("Matches(%v) = %v, want %v", tt.t.In(ny), got, tt.want)
		}
	}
	// A cron trigger never fires in the first pass.
	next, _ := c.Next(edt.Add(-time.Hour))
	if !next.Equal(est) {
		t.Errorf("Next before the overlap = %v, want %v", next, est)
	}
}

func TestCronTriggerEnd(t *testing.T) {
	c, err := ParseCron("0 0 12 * * ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2024, 1, d, 12, 0, 0, 0, time.UTC) }
	tr := &Trigger{Schedule: c, Start: day(1).Add(500 * time.Millisecond), End: day(3)}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	first, err := tr.ComputeFirst(nil)
	if err != nil || !first.Equal(day(1)) {
		t.Fatalf("ComputeFirst = %v %v, want %v (start second inclusive)", first, err, day(1))
	}
	var got []time.Time
	for !tr.Next.IsZero() {
		got = append(got, tr.Next)
		tr.Triggered(nil)
	}
	if len(got) != 3 || !got[2].Equal(day(3)) {
		t.Errorf("fires = %v, want days 1..3 (end inclusive)", got)
	}
	if _, ok := tr.FireTimeAfter(day(3)); ok {
		t.Error("FireTimeAfter(end) found a time")
	}
	if c.Kind() != KindCron {
		t.Errorf("Kind = %q", c.Kind())
	}
}

func TestCronMisfire(t *testing.T) {
	c, _ := ParseCron("0 0/15 * * * ?", nil)
	now := time.Date(2024, 1, 1, 13, 15, 0, 0, time.UTC)
	for _, tt := range []struct {
		p    MisfirePolicy
		want time.Time
	}{
		{MisfireSmart, now},
		{MisfireFireNow, now},
		{MisfireDoNothing, now.Add(15 * time.Minute)},
	} {
		tr := &Trigger{Schedule: c, Start: now.Add(-time.Hour), Misfire: tt.p}
		tr.ComputeFirst(nil)
		tr.UpdateAfterMisfire(nil, now)
		if !tr.Next.Equal(tt.want) {
			t.Errorf("%v: Next = %v, want %v", tt.p, tr.Next, tt.want)
		}
	}
}

// FuzzParseCron checks that parsing never panics and that String re-parses to the same
// schedule.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{
		"0 0 12 * * ?", "0 15 10 ? * MON-FRI", "0 0 0 L-2W * ?", "0 0 0 ? * 6#3", "0 0 0 ? * FRIL",
		"*/5 50-10 22-2 25-5 NOV-FEB ? 2024/2", "0 0 12 ?X * MONDAY", "99-5/2 0 0 1,,2 * ?", "a b c d e f",
		"0 0 12 ? * 3#+2", "0 0 0 1-٣ * ?", "0 0 12 * * ? L extra",
	} {
		f.Add(s)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	froms := []time.Time{
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 10, 1, 59, 30, 0, ny),
		time.Date(2024, 11, 3, 0, 59, 59, 0, ny),
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := ParseCron(expr, ny)
		if err != nil {
			var ce *CronError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CronError", err)
			}
			return
		}
		c2, err := ParseCron(c.String(), ny)
		if err != nil {
			t.Fatalf("String() = %q does not parse: %v", c.String(), err)
		}
		for _, from := range froms {
			a, b := from, from
			for range 5 {
				na, oka := c.Next(a)
				nb, okb := c2.Next(b)
				if oka != okb || !na.Equal(nb) {
					t.Fatalf("%q and %q differ after %v: %v %v / %v %v", expr, c.String(), a, na, oka, nb, okb)
				}
				if !oka {
					break
				}
				if !na.After(a) {
					t.Fatalf("%q: Next(%v) = %v is not after it", expr, a, na)
				}
				a, b = na, nb
			}
		}
	})
}
