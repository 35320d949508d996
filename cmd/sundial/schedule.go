package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial/internal/oraclecase"
	"github.com/sundial-scheduler/sundial/schedule"
)

func newScheduleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Work with schedules without a server",
	}
	cmd.AddCommand(newScheduleNextCmd(), newScheduleCompareCmd())
	return cmd
}

// nextOptions are the flags of `sundial schedule next`.
type nextOptions struct {
	dst          string
	cron         string
	every        time.Duration
	repeat       int
	calInterval  string
	preserveHour bool
	skipDay      bool
	daily        string
	days         string
	tz           string
	from         string
	start        string
	end          string
	calendars    []string
	n            int
	batch        bool
}

func newScheduleNextCmd() *cobra.Command {
	var o nextOptions
	cmd := &cobra.Command{
		Use:   "next",
		Short: "Print the next fire times of a schedule",
		Long: `Print the next fire times of a schedule, computed exactly as the scheduler will.

Give one schedule:
  --cron EXPR                      a Quartz cron expression (6 or 7 fields, Sunday = 1)
  --every DURATION [--repeat N]    a simple trigger: every DURATION, N more times (-1: forever)
  --calendar-interval "N UNIT"     every N SECOND|MINUTE|HOUR|DAY|WEEK|MONTH|YEAR of the zone's calendar
  --daily FROM-TO --every DURATION [--days MON-FRI]
                                   every DURATION between two times of day, on the given days

Calendars exclude times (--calendar may repeat; each is one of):
  holiday:2024-12-25,2025-01-01   weekly:1,7 (1 = Sunday)   monthly:1,15
  annual:12-25,01-01              daily:12:00-13:00          daily!:09:00-17:00 (only inside)
  cron:EXPR

With --batch, read case lines of the Quartz oracle's format on standard input and write its
output format, so the answers can be compared with Quartz's (see ../shared/quartz-oracle).`,
		Example: `  sundial schedule next --cron "0 30 2 * * ?" --tz America/New_York --from 2024-03-08T00:00:00 -n 3
  sundial schedule next --daily 09:00-17:00 --every 2h --days MON-FRI -n 5
  sundial schedule next --batch < corpus.txt > out.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.batch {
				return oraclecase.Run(cmd.InOrStdin(), cmd.OutOrStdout())
			}
			return o.run(cmd, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cron, "cron", "", "Quartz cron expression")
	f.DurationVar(&o.every, "every", 0, "interval of a simple or daily trigger (e.g. 90s, 15m, 2h)")
	f.IntVar(&o.repeat, "repeat", -1, "simple/daily trigger: fires after the first (-1: forever)")
	f.StringVar(&o.calInterval, "calendar-interval", "", `calendar interval "N UNIT", e.g. "1 MONTH"`)
	f.BoolVar(&o.preserveHour, "preserve-hour", false, "calendar interval: keep the hour of day across DST changes")
	f.BoolVar(&o.skipDay, "skip-day", false, "calendar interval: skip a day whose hour does not exist")
	f.StringVar(&o.daily, "daily", "", "daily window FROM-TO, e.g. 09:00-17:00 (both ends inclusive)")
	f.StringVar(&o.days, "days", "", "daily window days, e.g. MON-FRI or MON,WED,FRI (default: every day)")
	f.StringVar(&o.tz, "tz", "UTC", "time zone: IANA name or offset like +05:30")
	f.StringVar(&o.from, "from", "now", "list fires after this time: RFC 3339, a wall time in --tz (2024-03-10T09:00:00), or epoch ms")
	f.StringVar(&o.start, "start", "", "trigger start time (default: --from)")
	f.StringVar(&o.end, "end", "", "trigger end time (default: none)")
	f.StringArrayVar(&o.calendars, "calendar", nil, "exclusion calendar (repeatable)")
	f.IntVarP(&o.n, "count", "n", 10, "how many fire times to print (1..10000)")
	f.StringVar(&o.dst, "dst", "", "DST policy: quartz (default), once, once_skip_gap (docs/policies.md)")
	f.BoolVar(&o.batch, "batch", false, "read Quartz oracle case lines on stdin, write the oracle's output format")
	return cmd
}

func (o *nextOptions) run(cmd *cobra.Command, now time.Time) error {
	if o.n < 1 || o.n > 10000 {
		return usageErrorf("--count %d: must be 1..10000", o.n)
	}
	loc, err := schedule.LoadZone(o.tz)
	if err != nil {
		return usageErrorf("--tz: %v", err)
	}
	from, err := parseTime("--from", o.from, loc, now)
	if err != nil {
		return err
	}
	tr := &schedule.Trigger{Start: from}
	if o.start != "" {
		if tr.Start, err = parseTime("--start", o.start, loc, now); err != nil {
			return err
		}
	}
	if o.end != "" {
		if tr.End, err = parseTime("--end", o.end, loc, now); err != nil {
			return err
		}
	}
	if tr.Schedule, err = o.buildSchedule(cmd.Flags()); err != nil {
		return err
	}
	dst, err := schedule.ParseDSTPolicy(o.dst)
	if err != nil {
		return usageErrorf("--dst: %v", err)
	}
	if tr.Schedule, err = schedule.WithDST(tr.Schedule, dst); err != nil {
		return usageErrorf("--dst: %v", err)
	}
	zoned := schedule.LocationOf(tr.Schedule) != nil
	var cal schedule.Calendar
	if len(o.calendars) > 0 {
		if cal, err = schedule.ParseCalendarSpec(strings.Join(o.calendars, "+"), loc); err != nil {
			return usageErrorf("--calendar: %v", err)
		}
	}
	if err := tr.Validate(); err != nil {
		if fe, ok := schedule.AsField(err); ok {
			err = fe.Err // the flags, not the API's field names, are what the user gave
		}
		return usageErrorf("%v", err)
	}
	if c, ok := tr.Schedule.(*schedule.Cron); ok {
		for _, w := range c.Warnings() {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
		}
	}
	if _, err := tr.ComputeFirst(cal); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "no fire time: %v\n", err)
		return nil
	}
	out := cmd.OutOrStdout()
	for printed := 0; printed < o.n && !tr.Next.IsZero(); {
		if !tr.Next.Before(from) {
			t := tr.Next.In(loc)
			line := t.Format("2006-01-02T15:04:05.000-07:00") + "  " + t.Format("Mon")
			if m := schedule.DSTMark(t, loc); zoned && m != "" {
				line += "  DST " + m // next to a change: a time that occurs twice, or just after a gap
			}
			fmt.Fprintln(out, line)
			printed++
		}
		tr.Triggered(cal)
	}
	return nil
}

// buildSchedule turns the schedule flags into exactly one schedule: read as `trigger add`
// reads them, built and checked as the API builds a trigger's (api.Schedule.Build).
func (o *nextOptions) buildSchedule(f *pflag.FlagSet) (schedule.Schedule, error) {
	t := triggerFlags{cron: o.cron, tz: o.tz, calInterval: o.calInterval, daily: o.daily, days: o.days,
		every: o.every, repeat: o.repeat, preserveHour: o.preserveHour, skipDay: o.skipDay}
	req, err := t.request(f)
	if err != nil {
		return nil, err
	}
	s, err := req.Schedule.Build()
	var fe *schedule.FieldError
	if errors.As(err, &fe) {
		return nil, usageErrorf("%s: %v", scheduleFlags[fe.Field], fe.Err)
	}
	return s, err
}

// scheduleFlags are the flags that give the API's schedule fields.
var scheduleFlags = map[string]string{
	"time_zone": "--tz", "cron": "--cron", "every_ms": "--every", "repeat": "--repeat",
	"calendar_interval.interval": "--calendar-interval", "calendar_interval.unit": "--calendar-interval",
	"daily_interval.from": "--daily", "daily_interval.to": "--daily", "daily_interval.interval": "--every",
	"daily_interval.unit": "--every", "daily_interval.days": "--days", "daily_interval.repeat": "--repeat",
}

// dailyInterval expresses d in the largest of hours, minutes or seconds that divides it.
func dailyInterval(d time.Duration) (int, schedule.IntervalUnit, error) {
	switch {
	case d <= 0 || d%time.Second != 0:
		return 0, 0, usageErrorf("--every %s: a daily window needs a positive whole number of seconds", d)
	case d%time.Hour == 0:
		return int(d / time.Hour), schedule.Hour, nil
	case d%time.Minute == 0:
		return int(d / time.Minute), schedule.Minute, nil
	}
	return int(d / time.Second), schedule.Second, nil
}

// parseTime reads a flag's time: "now", epoch milliseconds, RFC 3339, or a wall time in loc.
func parseTime(flag, s string, loc *time.Location, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageErrorf("%s %q: want now, epoch milliseconds, RFC 3339 or a wall time like 2024-03-10T09:00:00", flag, s)
}
