package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file runs the oracle cases of the simple, calendar-interval and daily-interval kinds
// (and their misfire cases without a calendar) against Quartz's answers.

// intervalKinds are the trigger kinds this file checks.
var intervalKinds = []string{"simple", "calint", "daily"}

// intervalCaseKind returns the trigger kind of an oracle case this file handles, or "".
func intervalCaseKind(input string) string {
	f := strings.Fields(input)
	switch {
	case len(f) == 0:
		return ""
	case slices.Contains(intervalKinds, f[0]):
		return f[0]
	case f[0] == "misfire":
		sep := slices.Index(f, ";;")
		if sep < 0 || sep+1 >= len(f) || sep != 9 || f[8] != "none" || !slices.Contains(intervalKinds, f[sep+1]) {
			return ""
		}
		return "misfire-" + f[sep+1]
	}
	return ""
}

func parseZone(s string) (*time.Location, error) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		t, err := time.Parse("-07:00", s)
		if err != nil {
			return nil, err
		}
		_, off := t.Zone()
		return time.FixedZone(s, off), nil
	}
	return time.LoadLocation(s)
}

func parseMillis(s string) (time.Time, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad epoch ms %q", s)
	}
	return time.UnixMilli(ms), nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("bad boolean %q", s)
}

// parseIntervalSchedule builds the schedule from the tokens of a simple, calint or daily body
// (kind first, without TZ and START).
func parseIntervalSchedule(f []string, loc *time.Location) (Schedule, error) {
	want := map[string]int{"simple": 3, "calint": 5, "daily": 6}[f[0]]
	if len(f) != want {
		return nil, fmt.Errorf("%s: %d tokens, want %d", f[0], len(f), want)
	}
	switch f[0] {
	case "simple":
		ms, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, err
		}
		rc, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, err
		}
		return Simple{Interval: time.Duration(ms) * time.Millisecond, RepeatCount: rc}, nil
	case "calint":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, err
		}
		u, err := ParseIntervalUnit(f[2])
		if err != nil {
			return nil, err
		}
		preserve, err := parseBool(f[3])
		if err != nil {
			return nil, err
		}
		skip, err := parseBool(f[4])
		if err != nil {
			return nil, err
		}
		return CalendarInterval{Interval: n, Unit: u, Location: loc, PreserveHourOfDay: preserve, SkipDayIfHourDoesNotExist: skip}, nil
	case "daily":
		start, err := ParseTimeOfDay(f[1])
		if err != nil {
			return nil, err
		}
		end, err := ParseTimeOfDay(f[2])
		if err != nil {
			return nil, err
		}
		var days []time.Weekday
		for _, s := range strings.Split(f[3], ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, err
			}
			w, err := QuartzDayOfWeek(n)
			if err != nil {
				return nil, err
			}
			days = append(days, w)
		}
		n, err := strconv.Atoi(f[4])
		if err != nil {
			return nil, err
		}
		u, err := ParseIntervalUnit(f[5])
		if err != nil {
			return nil, err
		}
		return DailyInterval{StartTimeOfDay: start, EndTimeOfDay: end, Days: days, Interval: n, Unit: u,
			RepeatCount: RepeatForever, Location: loc}, nil
	}
	return nil, fmt.Errorf("unknown kind %q", f[0])
}

// intervalResult is what Sundial answers for a case, in the oracle's terms.
type intervalResult struct {
	Err     error
	Times   []int64
	HasNext bool
	Next    int64
	Repeat  int // simple misfire cases only
	TimesTr int
}

// runIntervalCase computes Sundial's answer to a simple, calint, daily or misfire case line.
func runIntervalCase(input string) intervalResult {
	f := strings.Fields(input)
	if f[0] == "misfire" {
		return runIntervalMisfire(f)
	}
	var (
		loc    = time.UTC
		body   []string
		startS string
		nS     string
		err    error
	)
	switch f[0] {
	case "simple":
		if len(f) != 5 {
			return intervalResult{Err: errors.New("simple: wrong token count")}
		}
		startS, nS, body = f[1], f[4], append([]string{"simple"}, f[2:4]...)
	case "calint", "daily":
		want := map[string]int{"calint": 8, "daily": 9}[f[0]]
		if len(f) != want {
			return intervalResult{Err: errors.New(f[0] + ": wrong token count")}
		}
		if loc, err = parseZone(f[1]); err != nil {
			return intervalResult{Err: err}
		}
		startS, nS, body = f[2], f[want-1], append([]string{f[0]}, f[3:want-1]...)
	}
	start, err := parseMillis(startS)
	if err != nil {
		return intervalResult{Err: err}
	}
	n, err := strconv.Atoi(nS)
	if err != nil {
		return intervalResult{Err: err}
	}
	sched, err := parseIntervalSchedule(body, loc)
	if err != nil {
		return intervalResult{Err: err}
	}
	tr := &Trigger{Schedule: sched, Start: start}
	if err := tr.Validate(); err != nil {
		return intervalResult{Err: err}
	}
	var r intervalResult
	if _, err := tr.ComputeFirst(nil); err != nil {
		return r // Quartz's computeFireTimes lists nothing
	}
	for range n {
		if tr.Next.IsZero() {
			break
		}
		r.Times = append(r.Times, tr.Next.UnixMilli())
		tr.Triggered(nil)
	}
	return r
}

// runIntervalMisfire runs "misfire TZ START END NOW FIRED INSTR N none ;; TRIGGER" as the oracle
// does: fire FIRED times, apply the misfire instruction with the clock at NOW, then fire N times.
func runIntervalMisfire(f []string) intervalResult {
	fail := func(err error) intervalResult { return intervalResult{Err: err} }
	loc, err := parseZone(f[1])
	if err != nil {
		return fail(err)
	}
	start, err := parseMillis(f[2])
	if err != nil {
		return fail(err)
	}
	var end time.Time
	if f[3] != "-" {
		if end, err = parseMillis(f[3]); err != nil {
			return fail(err)
		}
	}
	now, err := parseMillis(f[4])
	if err != nil {
		return fail(err)
	}
	fired, err := strconv.Atoi(f[5])
	if err != nil {
		return fail(err)
	}
	code, err := strconv.Atoi(f[6])
	if err != nil {
		return fail(err)
	}
	n, err := strconv.Atoi(f[7])
	if err != nil {
		return fail(err)
	}
	sched, err := parseIntervalSchedule(f[10:], loc)
	if err != nil {
		return fail(err)
	}
	policy, err := QuartzMisfireInstruction(sched.Kind(), code)
	if err != nil {
		return fail(err)
	}
	tr := &Trigger{Schedule: sched, Start: start, End: end, Misfire: policy}
	if err := tr.Validate(); err != nil {
		return fail(err)
	}
	if _, err := tr.ComputeFirst(nil); err != nil {
		return fail(err)
	}
	for range fired {
		if tr.Next.IsZero() {
			return fail(errors.New("FIRED is more fires than the trigger has"))
		}
		tr.Triggered(nil)
	}
	tr.UpdateAfterMisfire(nil, now)
	var r intervalResult
	if !tr.Next.IsZero() {
		r.HasNext, r.Next = true, tr.Next.UnixMilli()
	}
	if s, ok := tr.Schedule.(Simple); ok {
		r.Repeat, r.TimesTr = s.RepeatCount, tr.TimesTriggered
	}
	for range n {
		if tr.Next.IsZero() {
			break
		}
		tr.Triggered(nil)
		if tr.Next.IsZero() {
			break
		}
		r.Times = append(r.Times, tr.Next.UnixMilli())
	}
	return r
}

// missedBefore returns the pending fire time of a misfire case just before the instruction is
// applied, so the test can check it against MISFIRED.
func missedBefore(input string) (int64, bool) {
	f := strings.Fields(input)
	r := runIntervalMisfire(append(slices.Clone(f[:6]), append([]string{"-1", "0"}, f[8:]...)...))
	return r.Next, r.HasNext && r.Err == nil
}

// mismatch describes how Sundial's answer r differs from Quartz's c, or returns "".
func (r intervalResult) mismatch(c oracleCase) string {
	switch {
	case c.Err != "" && r.Err == nil:
		return fmt.Sprintf("Quartz: ERROR %s; Sundial accepted it (times %v)", c.Err, r.Times)
	case c.Err == "" && r.Err != nil:
		return fmt.Sprintf("Quartz: times %v; Sundial: error %v", c.Times, r.Err)
	case c.Err != "":
		return ""
	}
	if c.Misfire {
		if c.HasNext != r.HasNext || (c.HasNext && c.Next != r.Next) {
			return fmt.Sprintf("NEXT: Quartz %v %d, Sundial %v %d", c.HasNext, c.Next, r.HasNext, r.Next)
		}
		if c.HasRepeat && (c.Repeat != r.Repeat || c.TimesTriggered != r.TimesTr) {
			return fmt.Sprintf("REPEAT/TIMES: Quartz %d/%d, Sundial %d/%d", c.Repeat, c.TimesTriggered, r.Repeat, r.TimesTr)
		}
	}
	if !slices.Equal(c.Times, r.Times) {
		return fmt.Sprintf("times:\n  Quartz  %s\n  Sundial %s", fmtMillis(c.Times), fmtMillis(r.Times))
	}
	return ""
}

func fmtMillis(ms []int64) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s ", time.UnixMilli(m).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	return b.String()
}

func TestIntervalOracle(t *testing.T) {
	for _, file := range []string{"quartz-expected.txt", "extra-expected.txt"} {
		cases := loadOracle(t, file)
		pass := map[string]int{}
		total := map[string]int{}
		for _, c := range cases {
			kind := intervalCaseKind(c.Input)
			if kind == "" {
				continue
			}
			total[kind]++
			r := runIntervalCase(c.Input)
			got := r.mismatch(c)
			if reason, ok := intervalDivergences[c.Input]; ok {
				if got == "" {
					t.Errorf("%s: listed as a divergence (%s) but Sundial agrees with Quartz", c.Input, reason.why)
				} else if err := reason.check(r); err != nil {
					t.Errorf("%s: divergence (%s): %v", c.Input, reason.why, err)
				}
				continue
			}
			if c.Misfire && c.Err == "" {
				if missed, ok := missedBefore(c.Input); !ok || missed != c.Missed {
					t.Errorf("%s: MISFIRED: Quartz %d, Sundial %d (ok %v)", c.Input, c.Missed, missed, ok)
				}
			}
			if got != "" {
				t.Errorf("%s: %s", c.Input, got)
				continue
			}
			pass[kind]++
		}
		t.Logf("%s: passing %v of %v", file, pass, total)
		sum := 0
		for _, n := range total {
			sum += n
		}
		if want := map[string]int{"quartz-expected.txt": 156, "extra-expected.txt": 57}[file]; sum != want {
			t.Errorf("%s: %d simple/calint/daily cases, want %d", file, sum, want)
		}
	}
}
