package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestCronCalendar(t *testing.T) {
	ny := calZone(t, "America/New_York")
	c, err := NewCronCalendar("* * 1 ? * *", ny)
	if err != nil {
		t.Fatal(err)
	}
	// Both passes of the repeated hour are excluded, as in Quartz.
	calCheck(t, "hour 1", c, calOffset(2024, 11, 3, 0, 59, -4).Add(59*time.Second+999*time.Millisecond), true)
	calCheck(t, "hour 1", c, calOffset(2024, 11, 3, 1, 30, -4), false)
	calCheck(t, "hour 1", c, calOffset(2024, 11, 3, 1, 30, -5), false)
	calCheck(t, "hour 1", c, calOffset(2024, 11, 3, 2, 0, -5), true)

	// Only the matched second is excluded, all of its milliseconds.
	noon, err := NewCronCalendar("0 0 12 ? * MON-FRI", nil)
	if err != nil {
		t.Fatal(err)
	}
	mon := time.Date(2024, 6, 10, 12, 0, 0, 0, time.UTC)
	calCheck(t, "noon", noon, mon, false)
	calCheck(t, "noon", noon, mon.Add(999*time.Millisecond), false)
	calCheck(t, "noon", noon, mon.Add(time.Second), true)
	calCheck(t, "noon", noon, mon.AddDate(0, 0, 5), true) // Saturday

	noon.Base = NewWeeklyCalendar(nil)
	calCheck(t, "noon+weekly", noon, mon.AddDate(0, 0, 5).Add(time.Hour), false)

	if _, err := ParseCalendarSpec("cron:* * * * * *", nil); err == nil || !strings.Contains(err.Error(), "cron calendar") {
		t.Errorf("both day fields: err = %v", err)
	}
	cal, err := ParseCalendarSpec("cron:0 0 12 ? * MON-FRI+weekly", ny)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := FormatCalendarSpec(cal); err != nil || !strings.HasPrefix(s, "cron:0 0 12 ? * MON-FRI+weekly:1,7") {
		t.Errorf("FormatCalendarSpec = %q, %v", s, err)
	}
}
