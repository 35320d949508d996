package schedule

import (
	"testing"
	"time"
)

// BenchmarkSkipLongExclusion measures the search for a first fire time past a long stretch the
// calendar excludes, which the engine does while it holds database locks.
func BenchmarkSkipLongExclusion(b *testing.B) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // a Monday
	cases := []struct {
		name     string
		spec     string
		interval time.Duration
	}{
		{"weekly6of7/1s", "weekly:1,2,3,4,5,6", time.Second},
		{"cronYear/1s", "cron:* * * * * ? 2024", time.Second},
		{"holiday10y/1m", "holiday:" + benchHolidays(2024, 10), time.Minute},
		{"excludeAll/1m", "weekly:1,2,3,4,5,6,7", time.Minute},
	}
	for _, c := range cases {
		cal, err := ParseCalendarSpec(c.spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				tr := Trigger{Schedule: Simple{Interval: c.interval, RepeatCount: RepeatForever}, Start: start}
				tr.ComputeFirst(cal)
			}
		})
	}
}

// benchHolidays lists every date of years consecutive years from year, comma-separated.
func benchHolidays(year, years int) string {
	var s []byte
	for d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < year+years; d = d.AddDate(0, 0, 1) {
		if len(s) > 0 {
			s = append(s, ',')
		}
		s = d.AppendFormat(s, time.DateOnly)
	}
	return string(s)
}
