package schedule

import (
	"errors"
	"time"
)

// calNewCronCalendarSpec stands in for the CronCalendar until the cron parser is merged
// (calendar_cron.go replaces this file).
func calNewCronCalendarSpec(expr string, loc *time.Location) (calLinker, error) {
	return nil, errors.New("cron calendar: cron expressions are not available in this build")
}
