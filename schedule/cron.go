package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Cron is a parsed Quartz cron expression bound to a time zone. It is immutable and safe for
// concurrent use. As a Schedule it behaves like Quartz's CronTriggerImpl.
//
// The field sets keep Quartz's own representation, quirks included (the marker values 98 for
// '?' and 99 for '*', values a lenient step pushes past the field's range), because
// getTimeAfter's answers depend on them; see cron_next.go.
type Cron struct {
	expr string // normal form, see String
	loc  *time.Location

	sec, min, hour, dom, month, dow cronSet
	years                           cronYears

	domNoSpec, dowNoSpec bool // the field holds '?'
	dowFirst             int  // smallest day-of-week value (n#k may store values a set can't)

	lastDOW        bool // nL in day-of-week
	nthDOW         int  // k of n#k, 0 if none
	lastDOM        bool // L, L-n, LW, L-nW in day-of-month
	nearestWeekday bool // nW or LW
	lastDOMOffset  int  // n of L-n

	warnings []string
}

// CronError reports why ParseCron rejected an expression.
type CronError struct {
	Field string // "seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year" or "expression"
	Pos   int    // byte offset in the expression
	Msg   string
}

func (e *CronError) Error() string {
	return fmt.Sprintf("cron expression: %s at offset %d: %s", e.Field, e.Pos, e.Msg)
}

// MaxCronLength bounds an expression's length: parsing time grows with it (600 KB took
// 1.5 s), and every real expression, even one listing all 60 minutes, is far shorter.
const MaxCronLength = 1024

// ParseCron parses a Quartz cron expression: seconds, minutes, hours, day-of-month, month,
// day-of-week and an optional year. It accepts exactly what Quartz 2.3.2 accepts; where Quartz
// silently reads something surprising (MON/2, 1-5W, MONDAY, ...) the expression is accepted
// with Quartz's meaning and Warnings says what was read. A nil loc means UTC.
func ParseCron(expr string, loc *time.Location) (*Cron, error) {
	if len(expr) > MaxCronLength {
		return nil, &CronError{Field: "expression", Pos: MaxCronLength,
			Msg: fmt.Sprintf("longer than %d bytes (got %d)", MaxCronLength, len(expr))}
	}
	if loc == nil {
		loc = time.UTC
	}
	c, err := cronParse(expr)
	if err != nil {
		return nil, err
	}
	c.loc = loc
	return c, nil
}

// Warnings describes the parts of the expression that Quartz reads differently from what they
// appear to say, or ignores. It is empty for an unsurprising expression.
func (c *Cron) Warnings() []string { return append([]string(nil), c.warnings...) }

// String returns the expression in normal form: upper case, fields separated by single spaces,
// ignored trailing tokens dropped. It parses to the same schedule.
func (c *Cron) String() string { return c.expr }

// Location returns the zone the expression is evaluated in.
func (c *Cron) Location() *time.Location { return c.loc }

// Next returns the first time strictly after after (at whole seconds) that the expression
// matches, as Quartz's CronExpression.getTimeAfter. ok is false when there is none within
// horizonYears of after.
func (c *Cron) Next(after time.Time) (time.Time, bool) {
	sec, ok := c.next(cronFloorMillis(after))
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).In(c.loc), true
}

// Matches reports whether the expression matches t's second, as Quartz's isSatisfiedBy. Like
// Quartz it reads t through its wall-clock fields, so both passes of a repeated hour match
// when the second (standard-time) pass does.
func (c *Cron) Matches(t time.Time) bool {
	var z cronZone
	z.init(c.loc)
	sec := cronFloorDiv(cronFloorMillis(t), 1000)
	// Quartz rebuilds the instant from t's wall fields, which lands in the later pass of an
	// overlap, and then asks for the first fire time after the second before it.
	orig := z.resolve(sec + z.offsetAt(sec))
	got, ok := c.next((orig - 1) * 1000)
	return ok && got == orig
}

// Kind returns KindCron.
func (c *Cron) Kind() Kind { return KindCron }

// cronStart is CronTriggerImpl's start time: it drops the milliseconds.
func cronStart(tr *Trigger) time.Time {
	return time.Unix(cronFloorDiv(cronFloorMillis(tr.Start), 1000), 0)
}

func (c *Cron) firstFireTime(tr *Trigger) (time.Time, bool) {
	return c.fireTimeAfter(tr, cronStart(tr).Add(-time.Second))
}

func (c *Cron) fireTimeAfter(tr *Trigger, t time.Time) (time.Time, bool) {
	if start := cronStart(tr); start.After(t) {
		t = start.Add(-time.Second)
	}
	if !tr.End.IsZero() && !t.Before(tr.End) {
		return time.Time{}, false
	}
	next, ok := c.Next(t)
	if !ok || (!tr.End.IsZero() && next.After(tr.End)) {
		return time.Time{}, false
	}
	return next, true
}

func (c *Cron) validate(tr *Trigger) error { return nil }

func (c *Cron) updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time) {
	updateAfterMisfireRegular(tr, cal, now)
}

// cronFloorMillis is t as Java's Date sees it: epoch milliseconds, rounded down.
func cronFloorMillis(t time.Time) int64 {
	return t.Unix()*1000 + int64(t.Nanosecond()/1e6)
}

func cronFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (c *Cron) warnf(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

var cronFieldNames = [...]string{"seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"}

// cronNormalForm joins the significant tokens; parsing it again tokenizes identically.
func cronNormalForm(tokens []string) string {
	return strings.Join(tokens, " ")
}
