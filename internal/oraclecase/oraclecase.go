// Package oraclecase evaluates trigger cases written in the line format of the Quartz oracle
// (../shared/quartz-oracle) with Sundial's schedule package, and prints the answers in the
// oracle's output format, so that Sundial can be compared with Quartz 2.3.2 case by case.
//
// It backs `sundial schedule next --batch` and the oracle conformance test.
package oraclecase

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// maxFires bounds N, as the oracle does.
const maxFires = 10000

// localLayout is the oracle's local-time column.
const localLayout = "2006-01-02T15:04:05.000-07:00"

// Result is the answer to one case line.
type Result struct {
	Input string // the case line, trimmed
	Loc   *time.Location
	Times []time.Time // fire times (misfire cases: the fires after Next)
	Err   error       // non-nil: the case is invalid

	Misfire        bool
	Now, Missed    time.Time
	Next           time.Time // zero: none
	HasRepeat      bool
	Repeat         int
	TimesTriggered int
}

// inputError marks a line the harness cannot read (as opposed to a schedule Quartz rejects).
type inputError struct{ msg string }

func (e *inputError) Error() string { return "input: " + e.msg }

func inputErrorf(format string, args ...any) error {
	return &inputError{fmt.Sprintf(format, args...)}
}

// Evaluate answers one case line.
func Evaluate(line string) Result {
	line = strings.TrimSpace(line)
	r := Result{Input: line, Loc: time.UTC}
	r.Err = evaluate(&r, strings.Fields(line))
	return r
}

func evaluate(r *Result, f []string) error {
	if len(f) == 0 {
		return inputErrorf("empty case")
	}
	switch f[0] {
	case "cron":
		return evalCron(r, f)
	case "crontrig":
		return evalTrigger(r, f, 4, "crontrig <TZ> <startEpochMs> <N> <cron expression...>", "cron")
	case "simple":
		if len(f) != 5 {
			return inputErrorf("expected: simple <startEpochMs> <intervalMs> <repeatCount> <N>")
		}
		start, err := parseMillis("startEpochMs", f[1])
		if err != nil {
			return err
		}
		n, err := parseN(f[4])
		if err != nil {
			return err
		}
		spec := []string{"simple", f[2], f[3]}
		tr, err := buildTrigger(spec, r.Loc, time.UnixMilli(start))
		if err != nil {
			return err
		}
		return fireTimes(r, tr, nil, n)
	case "calint":
		return evalTrigger(r, f, 4, "calint <TZ> <startEpochMs> <interval> <unit> <preserveHourAcrossDST> <skipDayIfHourDoesNotExist> <N>", "calint")
	case "daily":
		return evalTrigger(r, f, 5, "daily <TZ> <startEpochMs> <HH:MM:SS> <HH:MM:SS> <days> <interval> <unit> <N>", "daily")
	case "calendar":
		return evalCalendar(r, f)
	case "misfire":
		return evalMisfire(r, strings.Join(f, " "))
	}
	return inputErrorf("unknown case kind '%s'", f[0])
}

func evalCron(r *Result, f []string) error {
	if len(f) < 5 {
		return inputErrorf("expected: cron <TZ> <startEpochMs> <N> <cron expression...>")
	}
	loc, start, n, err := zoneStartN(r, f[1], f[2], f[3])
	if err != nil {
		return err
	}
	c, err := schedule.ParseCron(strings.Join(f[4:], " "), loc)
	if err != nil {
		return err
	}
	t := start
	for range n {
		next, ok := c.Next(t)
		if !ok {
			break
		}
		r.Times = append(r.Times, next)
		t = next
	}
	return nil
}

// evalTrigger handles the kinds "KIND TZ START <spec...> N" (calint, daily) and
// "crontrig TZ START N EXPR..." (nArgs counts START's followers before N for the former).
func evalTrigger(r *Result, f []string, nArgs int, usage, kind string) error {
	var zone, startStr, nStr string
	var spec []string
	if kind == "cron" {
		if len(f) < 5 {
			return inputErrorf("expected: %s", usage)
		}
		zone, startStr, nStr = f[1], f[2], f[3]
		spec = append([]string{"cron"}, f[4:]...)
	} else {
		if len(f) != 3+nArgs+1 {
			return inputErrorf("expected: %s", usage)
		}
		zone, startStr, nStr = f[1], f[2], f[len(f)-1]
		spec = append([]string{kind}, f[3:len(f)-1]...)
	}
	loc, start, n, err := zoneStartN(r, zone, startStr, nStr)
	if err != nil {
		return err
	}
	tr, err := buildTrigger(spec, loc, start)
	if err != nil {
		return err
	}
	return fireTimes(r, tr, nil, n)
}

// evalCalendar handles "calendar TZ START N CALSPEC ;; TRIGGER".
func evalCalendar(r *Result, f []string) error {
	const usage = "calendar <TZ> <startEpochMs> <N> <calendars> ;; <trigger>"
	sep := indexOf(f, ";;")
	if len(f) < 6 || sep < 5 || sep == len(f)-1 {
		return inputErrorf("expected: %s", usage)
	}
	loc, start, n, err := zoneStartN(r, f[1], f[2], f[3])
	if err != nil {
		return err
	}
	cal, err := parseCalendars(f[4:sep], loc)
	if err != nil {
		return err
	}
	tr, err := buildTrigger(f[sep+1:], loc, start)
	if err != nil {
		return err
	}
	return fireTimes(r, tr, cal, n)
}

// MisfireCase is a parsed misfire case line: a trigger set up as the oracle sets it up
// before the outage. Trigger has its End and misfire policy set; ComputeFirst and Fired calls
// of Triggered bring it to the missed fire.
type MisfireCase struct {
	Zone     string
	Loc      *time.Location
	Now      time.Time
	Fired    int
	N        int
	Calendar string // the CALSPEC, "none" for no calendar
	Trigger  *schedule.Trigger
}

// ParseMisfire parses "misfire TZ START END NOW FIRED INSTR N CALSPEC ;; TRIGGER".
func ParseMisfire(line string) (*MisfireCase, error) {
	const usage = "misfire <TZ> <startEpochMs> <endEpochMs|-> <nowEpochMs> <fired> <instruction> <N> <calendars> ;; <trigger>"
	f := strings.Fields(line)
	sep := indexOf(f, ";;")
	if len(f) < 10 || f[0] != "misfire" || sep < 9 || sep == len(f)-1 {
		return nil, inputErrorf("expected: %s", usage)
	}
	var r Result
	loc, start, n, err := zoneStartN(&r, f[1], f[2], f[7])
	if err != nil {
		return nil, err
	}
	mc := &MisfireCase{Zone: f[1], Loc: loc, N: n, Calendar: strings.Join(f[8:sep], " ")}
	var end time.Time
	if f[3] != "-" {
		ms, err := parseMillis("endEpochMs", f[3])
		if err != nil {
			return nil, err
		}
		end = time.UnixMilli(ms)
	}
	nowMs, err := parseMillis("nowEpochMs", f[4])
	if err != nil {
		return nil, err
	}
	mc.Now = time.UnixMilli(nowMs)
	if mc.Fired, err = strconv.Atoi(f[5]); err != nil || mc.Fired < 0 {
		return nil, inputErrorf("bad fired '%s'", f[5])
	}
	instr, err := strconv.Atoi(f[6])
	if err != nil {
		return nil, inputErrorf("bad instruction '%s'", f[6])
	}
	if mc.Trigger, err = buildTrigger(f[sep+1:], loc, start); err != nil {
		return nil, err
	}
	mc.Trigger.End = end
	if mc.Trigger.Misfire, err = schedule.QuartzMisfireInstruction(mc.Trigger.Schedule.Kind(), instr); err != nil {
		return nil, err
	}
	return mc, nil
}

// evalMisfire runs a misfire case: the trigger fires FIRED times, misses the next fire,
// and its misfire instruction is applied with the clock at NOW.
func evalMisfire(r *Result, line string) error {
	mc, err := ParseMisfire(line)
	if err != nil {
		return err
	}
	r.Loc = mc.Loc
	cal, err := parseCalendars(strings.Fields(mc.Calendar), mc.Loc)
	if err != nil {
		return err
	}
	tr := mc.Trigger
	if err := tr.Validate(); err != nil {
		return err
	}
	if _, err := tr.ComputeFirst(cal); err != nil {
		return inputErrorf("%v", err)
	}
	for i := 0; i < mc.Fired; i++ {
		if tr.Next.IsZero() {
			return inputErrorf("the trigger has only %d fires, FIRED is %d", i, mc.Fired)
		}
		tr.Triggered(cal)
	}
	if tr.Next.IsZero() {
		// Quartz's words for the same case: there is no missed fire to apply the instruction to.
		return inputErrorf("the trigger has no next fire time before the misfire (it completed after %d fires)", mc.Fired)
	}
	r.Misfire, r.Now, r.Missed = true, mc.Now, tr.Next
	tr.UpdateAfterMisfire(cal, mc.Now)
	r.Next = tr.Next
	if s, ok := tr.Schedule.(schedule.Simple); ok {
		r.HasRepeat, r.Repeat, r.TimesTriggered = true, s.RepeatCount, tr.TimesTriggered
	}
	if r.Next.IsZero() {
		return nil
	}
	for range mc.N {
		tr.Triggered(cal)
		if tr.Next.IsZero() {
			break
		}
		r.Times = append(r.Times, tr.Next)
	}
	return nil
}

// fireTimes lists the first n fire times of tr as Quartz's TriggerUtils.computeFireTimes does.
func fireTimes(r *Result, tr *schedule.Trigger, cal schedule.Calendar, n int) error {
	if err := tr.Validate(); err != nil {
		return err
	}
	if _, err := tr.ComputeFirst(cal); err != nil && !errors.Is(err, schedule.ErrNeverFires) {
		return err
	}
	for range n {
		if tr.Next.IsZero() {
			break
		}
		r.Times = append(r.Times, tr.Next)
		tr.Triggered(cal)
	}
	return nil
}

func zoneStartN(r *Result, zone, start, n string) (*time.Location, time.Time, int, error) {
	loc, err := schedule.LoadZone(zone)
	if err != nil {
		return nil, time.Time{}, 0, inputErrorf("unknown time zone '%s'", zone)
	}
	r.Loc = loc
	ms, err := parseMillis("startEpochMs", start)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	count, err := parseN(n)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	return loc, time.UnixMilli(ms), count, nil
}

func parseMillis(field, s string) (int64, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, inputErrorf("bad %s '%s'", field, s)
	}
	return ms, nil
}

func parseN(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxFires {
		return 0, inputErrorf("N must be 1..%d", maxFires)
	}
	return n, nil
}

func parseCalendars(tokens []string, loc *time.Location) (schedule.Calendar, error) {
	spec := strings.Join(tokens, " ")
	if spec == "none" {
		return nil, nil
	}
	return schedule.ParseCalendarSpec(spec, loc)
}

func indexOf(f []string, tok string) int {
	for i, s := range f {
		if s == tok {
			return i
		}
	}
	return -1
}

// Run evaluates every case line of in and writes the oracle's output format to out. Comment
// lines are copied; blank lines are skipped.
func Run(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			fmt.Fprintln(w, sc.Text())
		default:
			Evaluate(line).Write(w)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading cases: %w", err)
	}
	return w.Flush()
}

// Write prints the result as one block of the oracle's output format.
func (r Result) Write(w io.Writer) {
	fmt.Fprintf(w, "> %s\n", r.Input)
	if r.Err != nil {
		fmt.Fprintf(w, "ERROR %s\nEND 0\n", strings.ReplaceAll(r.Err.Error(), "\n", " "))
		return
	}
	if r.Misfire {
		fmt.Fprintf(w, "NOW %s\nMISFIRED %s\n", r.stamp(r.Now), r.stamp(r.Missed))
		if r.Next.IsZero() {
			fmt.Fprintln(w, "NEXT none")
		} else {
			fmt.Fprintf(w, "NEXT %s\n", r.stamp(r.Next))
		}
		if r.HasRepeat {
			fmt.Fprintf(w, "REPEAT %d TIMES %d\n", r.Repeat, r.TimesTriggered)
		}
	}
	for _, t := range r.Times {
		fmt.Fprintln(w, r.stamp(t))
	}
	fmt.Fprintf(w, "END %d\n", len(r.Times))
}

func (r Result) stamp(t time.Time) string {
	return strconv.FormatInt(t.UnixMilli(), 10) + " " + t.In(r.Loc).Format(localLayout)
}
