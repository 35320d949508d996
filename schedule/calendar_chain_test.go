package schedule

import (
	"strings"
	"testing"
	"time"
)

// chainFires returns the first n fire times of a daily 03:00 Europe/Paris cron trigger
// starting on Friday 2027-01-08, under cal, as Paris weekdays and dates.
func chainFires(t *testing.T, cal Calendar, n int) string {
	t.Helper()
	paris := calZone(t, "Europe/Paris")
	c, err := ParseCron("0 0 3 * * ?", paris)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trigger{Schedule: c, Start: time.Date(2027, 1, 8, 0, 0, 0, 0, paris)}
	if _, err := tr.ComputeFirst(cal); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := 0; i < n && !tr.Next.IsZero(); i++ {
		out = append(out, tr.Next.In(paris).Format("Mon 02 15:04"))
		tr.Triggered(cal)
	}
	return strings.Join(out, ", ")
}

// A calendar with a zone of its own is read in it, not in its trigger's: Quartz converts the
// fire time to the calendar's TimeZone before the check. 03:00 in Paris is 21:00 the day
// before in New York, so New York's weekend excludes the Paris Sunday and Monday fires and
// lets the Saturday one through.
func TestBuildCalendarChainOwnZone(t *testing.T) {
	paris := calZone(t, "Europe/Paris")
	cal, err := BuildCalendarChain([]CalendarLink{{Spec: "weekly:1,7", Zone: "America/New_York"}}, paris)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chainFires(t, cal, 5), "Fri 08 03:00, Sat 09 03:00, Tue 12 03:00, Wed 13 03:00, Thu 14 03:00"; got != want {
		t.Errorf("NY weekends under a Paris trigger fire\n got %s\nwant %s", got, want)
	}
	// Without a zone the same calendar is read in the trigger's zone (Paris weekends).
	cal, err = BuildCalendarChain([]CalendarLink{{Spec: "weekly:1,7"}}, paris)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chainFires(t, cal, 3), "Fri 08 03:00, Mon 11 03:00, Tue 12 03:00"; got != want {
		t.Errorf("weekends in the trigger's zone fire\n got %s\nwant %s", got, want)
	}
}

// Each link of a chain is read in its own zone, or the trigger's when it has none, as each
// calendar of a Quartz chain checks the time in its own TimeZone.
func TestBuildCalendarChainMixedZones(t *testing.T) {
	paris := calZone(t, "Europe/Paris")
	cal, err := BuildCalendarChain([]CalendarLink{
		{Spec: "holiday:2027-01-12"}, // Paris: Tuesday the 12th 03:00 Paris is excluded
		{Spec: "none"},               // excludes nothing
		{Spec: "weekly:1,7", Zone: "America/New_York"},
	}, paris)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chainFires(t, cal, 3), "Fri 08 03:00, Sat 09 03:00, Wed 13 03:00"; got != want {
		t.Errorf("a Paris holiday on NY weekends fires\n got %s\nwant %s", got, want)
	}
	// The holiday is a New York day when the link says so: 2027-01-12 in New York covers
	// 06:00 on the 12th to 06:00 on the 13th in Paris, so the 13th's 03:00 fire goes.
	cal, err = BuildCalendarChain([]CalendarLink{{Spec: "holiday:2027-01-12", Zone: "America/New_York"}}, paris)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chainFires(t, cal, 6), "Fri 08 03:00, Sat 09 03:00, Sun 10 03:00, Mon 11 03:00, Tue 12 03:00, Thu 14 03:00"; got != want {
		t.Errorf("a NY holiday fires\n got %s\nwant %s", got, want)
	}
}

func TestBuildCalendarChainErrors(t *testing.T) {
	if _, err := BuildCalendarChain([]CalendarLink{{Spec: "weekly:1,7", Zone: "Mars/Olympus"}}, time.UTC); err == nil ||
		!strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("an unknown zone: err = %v, want one naming it", err)
	}
	if _, err := BuildCalendarChain([]CalendarLink{{Spec: "weekly:1,7"}, {Spec: "monthly:32"}}, time.UTC); err == nil {
		t.Error("a bad spec in a base link: no error")
	}
	if cal, err := BuildCalendarChain([]CalendarLink{{Spec: "none"}}, time.UTC); cal != nil || err != nil {
		t.Errorf("a chain of none = %v, %v; want no calendar", cal, err)
	}
}
