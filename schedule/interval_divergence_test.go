package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// intervalDivergence is an oracle case where Sundial deliberately answers differently from
// Quartz, with the reason and Sundial's own answer.
type intervalDivergence struct {
	why   string
	check func(intervalResult) error
}

// Reasons shared by several cases.
const (
	whySpringForward = "Quartz steps to the next day's window start with Calendar.add(DATE, 1) from a start that the " +
		"spring-forward gap pushed an hour later, so the next allowed day loses the slots before that hour; " +
		"Sundial fires every slot that exists on the local clock"
	whyDayNumber = "Quartz accepts day number 0 or 8, then never finds that day and returns the same day's times " +
		"over and over (its fire times run backwards); Sundial rejects the day number"
	whyEndTime = "Quartz checks a daily-interval trigger's end time only against the instant the search starts " +
		"from, so it fires at a later slot the same day past the end time; Sundial never fires after End"
)

var intervalDivergences = map[string]intervalDivergence{
	// New York 2024-03-10: 02:00 does not exist, the window is 03:00–03:00 that day; on 03-11
	// Quartz starts at 03:00 again.
	"daily America/New_York 1710003600000 02:00:00 03:00:00 1,2,3,4,5,6,7 15 MINUTE 8": {whySpringForward, wantTimes(
		"2024-03-10T07:00Z", "2024-03-11T06:00Z", "2024-03-11T06:15Z", "2024-03-11T06:30Z", "2024-03-11T06:45Z",
		"2024-03-11T07:00Z", "2024-03-12T06:00Z", "2024-03-12T06:15Z")},
	// Quartz skips 03-11 entirely (its 03:30 is past the 02:30 window).
	"daily America/New_York 1710003600000 02:30:00 02:30:00 1,2,3,4,5,6,7 1 HOUR 3": {whySpringForward, wantTimes(
		"2024-03-10T07:30Z", "2024-03-11T06:30Z", "2024-03-12T06:30Z")},
	// Lord Howe's 30-minute gap: 02:15 becomes 02:45 on 10-06; Quartz then skips 10-07.
	"daily Australia/Lord_Howe 1728091800000 02:15:00 02:15:00 1,2,3,4,5,6,7 1 HOUR 3": {whySpringForward, wantTimes(
		"2024-10-05T15:45Z", "2024-10-06T15:15Z", "2024-10-07T15:15Z")},
	// Sundays only: Quartz carries 03:00 a whole week, to 03-17, and fires only at 03:00 there.
	"daily America/New_York 1709960400000 02:00:00 03:00:00 1 30 MINUTE 6": {whySpringForward, wantTimes(
		"2024-03-10T07:00Z", "2024-03-17T06:00Z", "2024-03-17T06:30Z", "2024-03-17T07:00Z", "2024-03-24T06:00Z",
		"2024-03-24T06:30Z")},
	// DO_NOTHING at 12:00 on the gap day: the next slot is 02:00 on 03-11, not 03:00.
	"misfire America/New_York 1709269200000 - 1710086400000 0 2 6 none ;; daily 02:00:00 03:00:00 1,2,3,4,5,6,7 20 MINUTE": {
		whySpringForward, wantMisfire("2024-03-11T06:00Z", "2024-03-11T06:20Z", "2024-03-11T06:40Z", "2024-03-11T07:00Z",
			"2024-03-12T06:00Z", "2024-03-12T06:20Z", "2024-03-12T06:40Z")},
	// FIRE_ONCE_NOW at 03:10 on the gap day, then the same.
	"misfire America/New_York 1709269200000 - 1710054600000 0 1 6 none ;; daily 02:00:00 03:00:00 1,2,3,4,5,6,7 20 MINUTE": {
		whySpringForward, wantMisfire("2024-03-10T07:10Z", "2024-03-11T06:00Z", "2024-03-11T06:20Z", "2024-03-11T06:40Z",
			"2024-03-11T07:00Z", "2024-03-12T06:00Z", "2024-03-12T06:20Z")},

	"daily America/New_York 1709528400000 09:00:00 17:00:00 0 1 HOUR 12": {whyDayNumber, wantErr("day of week 0")},
	"daily America/New_York 1709528400000 09:00:00 17:00:00 8 4 HOUR 8":  {whyDayNumber, wantErr("day of week 8")},

	// End 14:00 on a 09:00–17:00 every-2-hours window: Quartz still fires at 15:00.
	"misfire UTC 1717977600000 1718028000000 1717999200000 0 2 5 none ;; daily 09:00:00 17:00:00 2,3,4,5,6 2 HOUR": {
		whyEndTime, wantMisfire("2024-06-10T09:00Z", "2024-06-10T11:00Z", "2024-06-10T13:00Z")},
}

func parseUTC(s string) int64 {
	t, err := time.Parse("2006-01-02T15:04Z", s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// wantTimes requires exactly these fire times (UTC, to the minute).
func wantTimes(times ...string) func(intervalResult) error {
	var want []int64
	for _, s := range times {
		want = append(want, parseUTC(s))
	}
	return func(r intervalResult) error {
		if r.Err != nil || !slices.Equal(r.Times, want) {
			return fmt.Errorf("Sundial: %s (err %v), want %s", fmtMillis(r.Times), r.Err, fmtMillis(want))
		}
		return nil
	}
}

// wantMisfire requires NEXT to be next and the fires after it to be times.
func wantMisfire(next string, times ...string) func(intervalResult) error {
	rest := wantTimes(times...)
	return func(r intervalResult) error {
		if !r.HasNext || r.Next != parseUTC(next) {
			return fmt.Errorf("NEXT %d (has %v), want %s", r.Next, r.HasNext, next)
		}
		return rest(r)
	}
}

// wantErr requires an error mentioning substr.
func wantErr(substr string) func(intervalResult) error {
	return func(r intervalResult) error {
		if r.Err == nil || !strings.Contains(r.Err.Error(), substr) {
			return fmt.Errorf("error %v, want one mentioning %q", r.Err, substr)
		}
		return nil
	}
}
