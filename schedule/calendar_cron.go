package schedule

import (
	"fmt"
	"time"
)

// CronCalendar excludes every instant whose second a Quartz cron expression matches
// (Quartz's CronCalendar). The expression's zone, given to ParseCron, is the calendar's
// zone. Around a fall-back change it excludes both passes of a matched hour, as Quartz does.
type CronCalendar struct {
	Base Calendar
	Cron *Cron
}

// NewCronCalendar parses expr in loc (nil means UTC) with ParseCron.
func NewCronCalendar(expr string, loc *time.Location) (*CronCalendar, error) {
	c, err := ParseCron(expr, calLocation(loc))
	if err != nil {
		return nil, fmt.Errorf("cron calendar: %w", err)
	}
	return &CronCalendar{Cron: c}, nil
}

// Includes reports whether the cron expression does not match t's second.
func (c *CronCalendar) Includes(t time.Time) bool {
	return !c.Cron.Matches(t) && calBaseIncludes(c.Base, t)
}

func (c *CronCalendar) setBase(b Calendar) { c.Base = b }
func (c *CronCalendar) base() Calendar     { return c.Base }

func (c *CronCalendar) location() *time.Location { return calLocation(c.Cron.Location()) }
func (c *CronCalendar) spec() string             { return "cron:" + c.Cron.String() }

func calNewCronCalendarSpec(expr string, loc *time.Location) (calLinker, error) {
	return NewCronCalendar(expr, loc)
}
