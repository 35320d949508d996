package schedule

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSpecRoundTrip(t *testing.T) {
	ny, err := LoadZone("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cron, err := ParseCron("0 15 10 ? * MON-FRI", ny)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Schedule{
		cron,
		Simple{Interval: 90 * time.Second, RepeatCount: RepeatForever},
		Simple{},
		CalendarInterval{Interval: 2, Unit: Month, Location: ny, PreserveHourOfDay: true},
		DailyInterval{StartTimeOfDay: TimeOfDay{9, 0, 0}, EndTimeOfDay: TimeOfDay{17, 30, 0},
			Days: []time.Weekday{time.Monday, time.Friday}, Interval: 15, Unit: Minute, RepeatCount: 3, Location: ny},
	} {
		spec := EncodeSpec(s)
		back, err := DecodeSpec(s.Kind(), spec, ny)
		if err != nil {
			t.Errorf("%s %s: %v", s.Kind(), spec, err)
			continue
		}
		if again := EncodeSpec(back); again != spec {
			t.Errorf("%s: re-encoded %s, want %s", s.Kind(), again, spec)
		}
		if _, isCron := s.(*Cron); !isCron && !reflect.DeepEqual(back, s) {
			t.Errorf("%s: decoded %#v, want %#v", s.Kind(), back, s)
		}
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		spec string
		want string
	}{
		{KindCron, `{"expr":"0 0 * * * *"}`, "day-of-week"},
		{KindSimple, `{"interval_ms":"x"}`, "interval_ms"},
		{KindSimple, `{"bogus":1}`, "bogus"},
		{KindCalendarInterval, `{"interval":1,"unit":"FORTNIGHT"}`, "FORTNIGHT"},
		{KindDailyInterval, `{"from":"09:00:00","to":"17:00:00","unit":"MINUTE","interval":5,"days":"MON,FUNDAY"}`, "FUNDAY"},
		{"rrule", `{}`, "rrule"},
	} {
		_, err := DecodeSpec(tc.kind, tc.spec, time.UTC)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeSpec(%s, %s) = %v, want an error naming %q", tc.kind, tc.spec, err, tc.want)
		}
	}
}

func TestParseDays(t *testing.T) {
	got, err := ParseDays("sat-mon,wed")
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Weekday{time.Saturday, time.Sunday, time.Monday, time.Wednesday}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDays = %v, want %v", got, want)
	}
	if _, err := ParseDays("MON-XYZ"); err == nil {
		t.Error("ParseDays(MON-XYZ) succeeded")
	}
}
