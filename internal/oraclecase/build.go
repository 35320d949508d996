package oraclecase

import (
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// buildTrigger makes the trigger a case's TRIGGER tokens describe:
//
//	cron EXPR...
//	simple INTERVAL_MS REPEAT_COUNT
//	calint INTERVAL UNIT PRESERVE SKIP
//	daily HH:MM:SS HH:MM:SS DAYS INTERVAL UNIT [REPEAT_COUNT]
//
// The daily repeat count is Sundial's extension of the oracle's format (Quartz's
// DailyTimeIntervalTriggerImpl.setRepeatCount; schedule/testdata/misfire-left-corpus.txt says
// how its answers were made); without it the trigger repeats forever, as the oracle's does.
func buildTrigger(f []string, loc *time.Location, start time.Time) (*schedule.Trigger, error) {
	tr := &schedule.Trigger{Start: start}
	switch f[0] {
	case "cron":
		if len(f) < 2 {
			return nil, inputErrorf("expected: cron <cron expression...>")
		}
		c, err := schedule.ParseCron(strings.Join(f[1:], " "), loc)
		if err != nil {
			return nil, err
		}
		tr.Schedule = c
	case "simple":
		if len(f) != 3 {
			return nil, inputErrorf("expected: simple <intervalMs> <repeatCount>")
		}
		interval, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, inputErrorf("bad intervalMs '%s'", f[1])
		}
		repeat, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, inputErrorf("bad repeatCount '%s'", f[2])
		}
		tr.Schedule = schedule.Simple{Interval: time.Duration(interval) * time.Millisecond, RepeatCount: repeat}
	case "calint":
		if len(f) != 5 {
			return nil, inputErrorf("expected: calint <interval> <unit> <preserveHourAcrossDST> <skipDayIfHourDoesNotExist>")
		}
		interval, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, inputErrorf("bad interval '%s'", f[1])
		}
		unit, err := schedule.ParseIntervalUnit(f[2])
		if err != nil {
			return nil, err
		}
		preserve, err := parseBool("preserveHourAcrossDST", f[3])
		if err != nil {
			return nil, err
		}
		skip, err := parseBool("skipDayIfHourDoesNotExist", f[4])
		if err != nil {
			return nil, err
		}
		tr.Schedule = schedule.CalendarInterval{Interval: interval, Unit: unit, Location: loc,
			PreserveHourOfDay: preserve, SkipDayIfHourDoesNotExist: skip}
	case "daily":
		if len(f) != 6 && len(f) != 7 {
			return nil, inputErrorf("expected: daily <HH:MM:SS> <HH:MM:SS> <days> <interval> <unit> [<repeatCount>]")
		}
		repeat := schedule.RepeatForever
		if len(f) == 7 {
			n, err := strconv.Atoi(f[6])
			if err != nil {
				return nil, inputErrorf("bad repeatCount '%s'", f[6])
			}
			repeat = n
		}
		from, err := schedule.ParseTimeOfDay(f[1])
		if err != nil {
			return nil, err
		}
		to, err := schedule.ParseTimeOfDay(f[2])
		if err != nil {
			return nil, err
		}
		var days []time.Weekday
		for _, d := range strings.Split(f[3], ",") {
			n, err := strconv.Atoi(d)
			if err != nil {
				return nil, inputErrorf("bad day '%s'", d)
			}
			wd, err := schedule.QuartzDayOfWeek(n)
			if err != nil {
				return nil, err
			}
			days = append(days, wd)
		}
		interval, err := strconv.Atoi(f[4])
		if err != nil {
			return nil, inputErrorf("bad interval '%s'", f[4])
		}
		unit, err := schedule.ParseIntervalUnit(f[5])
		if err != nil {
			return nil, err
		}
		tr.Schedule = schedule.DailyInterval{StartTimeOfDay: from, EndTimeOfDay: to, Days: days,
			Interval: interval, Unit: unit, RepeatCount: repeat, Location: loc}
	default:
		return nil, inputErrorf("unknown trigger '%s'", f[0])
	}
	return tr, nil
}

func parseBool(field, s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, inputErrorf("bad %s '%s' (true/false)", field, s)
}
