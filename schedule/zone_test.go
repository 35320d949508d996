package schedule

import (
	"testing"
	"time"
)

func TestLoadZone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int // seconds east of UTC on 2024-01-15, or -1 for an error
	}{
		{"UTC", 0},
		{"Asia/Kolkata", 19800},
		{"America/New_York", -18000},
		{"+05:30", 19800},
		{"-08:00", -28800},
		{"+14", 50400},
		{"Mars/Olympus", -1},
		{"", -1},
		{"Local", -1},
		{"+5:30", -1},
		{"+19:00", -1},
	} {
		loc, err := LoadZone(tc.name)
		if tc.offset == -1 {
			if err == nil {
				t.Errorf("LoadZone(%q) = %v, want an error", tc.name, loc)
			}
			continue
		}
		if err != nil {
			t.Errorf("LoadZone(%q): %v", tc.name, err)
			continue
		}
		_, off := mustDate(2024, 1, 15).In(loc).Zone()
		if off != tc.offset {
			t.Errorf("LoadZone(%q) offset %d, want %d", tc.name, off, tc.offset)
		}
	}
}

func mustDate(y, m, d int) time.Time { return time.Date(y, time.Month(m), d, 12, 0, 0, 0, time.UTC) }
