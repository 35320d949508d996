package api

import (
	"encoding/json"
	"testing"

	"github.com/sundial-scheduler/sundial/schedule"
)

func ptr[T any](v T) *T { return &v }

// Each form of the schedule object builds a schedule that prints back as the same object,
// and its summary reads as the CLI shows it.
func TestScheduleRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in      Schedule
		summary string
	}{
		{Schedule{Cron: ptr("0 0 9 ? * MON-FRI"), TimeZone: "Europe/Berlin"}, "cron 0 0 9 ? * MON-FRI (Europe/Berlin)"},
		{Schedule{EveryMs: ptr[int64](90000), Repeat: ptr(2), TimeZone: "UTC"}, "every 1m30s, 3 times"},
		{Schedule{EveryMs: ptr[int64](1000), Repeat: ptr(-1), TimeZone: "UTC"}, "every 1s"},
		{Schedule{Once: true, TimeZone: "UTC"}, "once"},
		{Schedule{CalendarInterval: &CalendarInterval{Interval: 1, Unit: "MONTH", PreserveHour: true}, TimeZone: "UTC"}, "every 1 MONTH"},
		{Schedule{DailyInterval: &DailyInterval{From: "09:00:00", To: "17:00:00", Interval: 2, Unit: "HOUR", Days: "MON,TUE",
			Repeat: ptr(-1)}, TimeZone: "America/New_York"}, "09:00:00-17:00:00 every 2 HOUR MON,TUE (America/New_York)"},
	} {
		sched, err := tc.in.Build()
		if err != nil {
			t.Errorf("%s: %v", tc.summary, err)
			continue
		}
		out := ScheduleOf(sched, tc.in.TimeZone)
		want, _ := json.Marshal(tc.in)
		got, _ := json.Marshal(out)
		if string(got) != string(want) {
			t.Errorf("round trip:\n got %s\nwant %s", got, want)
		}
		if s := out.Summary(); s != tc.summary {
			t.Errorf("summary %q, want %q", s, tc.summary)
		}
	}
}

// A bad schedule is a field error naming the JSON field.
func TestScheduleFieldErrors(t *testing.T) {
	for _, tc := range []struct {
		in    Schedule
		field string
	}{
		{Schedule{}, "cron"},
		{Schedule{Cron: ptr("0 0 * * * ?"), Once: true}, "once"},
		{Schedule{Cron: ptr("0 0 25 * * ?")}, "cron"},
		{Schedule{Cron: ptr("0 0 * * * ?"), TimeZone: "Mars/Olympus"}, "time_zone"},
		{Schedule{EveryMs: ptr[int64](0)}, "every_ms"},
		{Schedule{EveryMs: ptr[int64](10), Repeat: ptr(-2)}, "repeat"},
		{Schedule{CalendarInterval: &CalendarInterval{Interval: 0, Unit: "DAY"}}, "calendar_interval.interval"},
		{Schedule{DailyInterval: &DailyInterval{From: "9", To: "17:00", Interval: 1, Unit: "HOUR"}}, "daily_interval.from"},
		{Schedule{DailyInterval: &DailyInterval{From: "09:00", To: "17:00", Interval: 1, Unit: "HOUR", Days: "MON-XYZ"}}, "daily_interval.days"},
	} {
		if _, err := tc.in.Build(); fieldOf(err) != tc.field {
			t.Errorf("%+v: error %v, want a field error for %s", tc.in, err, tc.field)
		}
	}
	req := TriggerRequest{Start: "tomorrow", Misfire: "sometimes"}
	if _, _, err := req.Times(); fieldOf(err) != "start" {
		t.Errorf("bad start: %v", err)
	}
	if _, err := req.MisfirePolicy(); fieldOf(err) != "misfire" {
		t.Errorf("bad misfire: %v", err)
	}
}

func fieldOf(err error) string {
	if fe, ok := schedule.AsField(err); ok {
		return fe.Field
	}
	return ""
}
