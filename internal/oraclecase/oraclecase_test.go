package oraclecase

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testdata = "../../schedule/testdata/"

// TestQuartzOracle evaluates every case the real Quartz 2.3.2 answered — its corpus and the
// cases Sundial added where the corpus was silent, and Quartz's 600 misfires of daily-interval
// triggers with an end time — and requires Quartz's answer: the same
// fire times to the millisecond, the same misfire state, and an error exactly where Quartz
// reports one. The cases listed in divergences.txt are where Quartz is plainly broken: each
// must differ from Quartz and give the answer sundialAnswers pins for it.
func TestQuartzOracle(t *testing.T) {
	divergent := loadDivergences(t)
	for line := range divergent {
		if sundialAnswers[line] == nil {
			t.Errorf("%s: listed in divergences.txt without a pinned answer in sundialAnswers", line)
		}
	}
	for line := range sundialAnswers {
		if _, ok := divergent[line]; !ok {
			t.Errorf("%s: pinned in sundialAnswers but not listed in divergences.txt", line)
		}
	}
	seen := map[string]bool{}
	for _, name := range []string{"quartz", "extra", "misfire-left", "daily-end"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(testdata + name + "-expected.txt")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want, err := ReadExpected(f)
			if err != nil {
				t.Fatal(err)
			}
			checkCaseCount(t, name, want)
			matched := 0
			kinds := map[string]int{}
			for _, w := range want {
				kinds[caseKind(w.Input)]++
				got := Evaluate(w.Input)
				diff := Compare(got, w)
				if _, ok := divergent[w.Input]; ok {
					seen[w.Input] = true
					if diff == "" {
						t.Errorf("%s: listed in divergences.txt but matches Quartz", w.Input)
					}
					if pin := sundialAnswers[w.Input]; pin != nil {
						if msg := pin(got, w); msg != "" {
							t.Errorf("%s: not Sundial's pinned answer: %s", w.Input, msg)
						}
					}
					continue
				}
				if diff != "" {
					t.Errorf("%s: %s", w.Input, diff)
					continue
				}
				matched++
			}
			t.Logf("%s: %d of %d cases match Quartz; the rest are named divergences", name, matched, len(want))
			t.Logf("%s: cases by kind: %v", name, kinds)
		})
	}
	for line := range divergent {
		if !seen[line] {
			t.Errorf("%s: listed in divergences.txt but not a case of either expected file", line)
		}
	}
}

// checkCaseCount guards against a truncated file or a reader that drops blocks, either of
// which would let the oracle test pass while checking less. Quartz's corpus is fixed; cases are
// only ever appended to extra-expected.txt.
func checkCaseCount(t *testing.T, name string, want []Expected) {
	t.Helper()
	errs := 0
	for _, w := range want {
		if w.Err != "" {
			errs++
		}
	}
	switch {
	case name == "quartz" && (len(want) != 495 || errs != 75):
		t.Fatalf("%d Quartz cases, %d of them errors; want the corpus's 495 and 75", len(want), errs)
	case name == "extra" && len(want) < 1432:
		t.Fatalf("%d extra cases, want at least 1432", len(want))
	case name == "misfire-left" && (len(want) != 912 || errs != 44):
		t.Fatalf("%d misfire-left cases, %d of them errors; want the corpus's 912 and 44", len(want), errs)
	case name == "daily-end" && (len(want) != 600 || errs != 411):
		t.Fatalf("%d daily-end cases, %d of them errors; want the corpus's 600 and 411", len(want), errs)
	}
}

// caseKind names a case by its kind and, for calendar and misfire cases, its trigger's kind,
// for the logged summary.
func caseKind(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	if sep := slices.Index(f, ";;"); sep >= 0 && sep+1 < len(f) {
		return f[0] + "/" + f[sep+1]
	}
	return f[0]
}

// loadDivergences reads divergences.txt.
func loadDivergences(t *testing.T) map[string]string {
	f, err := os.Open(testdata + "divergences.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := ReadDivergences(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// answer checks Sundial's result for a divergent case against what Sundial should answer there;
// quartz is Quartz's answer to the same case. It returns what is wrong, or "".
type answer func(got Result, quartz Expected) string

// sundialAnswers pins, for every case of divergences.txt, the answer Sundial gives instead of
// Quartz's. The reasons are in divergences.txt; the comments here describe the answers.
var sundialAnswers = map[string]answer{
	// DailyCalendar: midnight (or 23:59:59.999) is a fire time of these triggers.
	"calendar UTC 1717999200000 14 daily:08:00:00-17:00:00 ;; cron 0 0 * * * ?":                 matchesWithDailyDefect,
	"calendar UTC 1718020800000 3 daily:12:00:00-13:00:00 ;; cron 0 0 0 * * ?":                  matchesWithDailyDefect,
	"calendar UTC 1718060400000 6 daily:01:00:00-02:00:00 ;; simple 1800000 -1":                 matchesWithDailyDefect,
	"calendar UTC 1718063999998 4 daily:12:00:00-13:00:00 ;; simple 1 -1":                       matchesWithDailyDefect,
	"calendar America/New_York 1710046800000 10 daily:02:00:00-03:00:00 ;; simple 900000 -1":    matchesWithDailyDefect,
	"calendar America/New_York 1710046800000 10 daily:02:30:00-03:30:00 ;; simple 900000 -1":    matchesWithDailyDefect,
	"calendar America/New_York 1710046800000 12 daily:02:15:00-02:45:00 ;; cron 0 0/15 * * * ?": matchesWithDailyDefect,
	"calendar America/New_York 1730606400000 14 daily:01:00:00-01:59:59 ;; simple 900000 -1":    matchesWithDailyDefect,
	"calendar America/New_York 1730606400000 10 daily:00:30:00-01:30:00 ;; cron 0 0/15 * * * ?": matchesWithDailyDefect,
	"calendar America/New_York 1730606400000 10 daily:01:30:00-02:30:00 ;; simple 900000 -1":    matchesWithDailyDefect,
	"calendar Australia/Lord_Howe 1728135000000 12 daily:02:00:00-02:45:00 ;; simple 900000 -1": matchesWithDailyDefect,
	"calendar Australia/Lord_Howe 1728135000000 12 daily:02:05:00-02:20:00 ;; simple 300000 -1": matchesWithDailyDefect,
	"calendar Australia/Lord_Howe 1712408400000 14 daily:01:30:00-01:50:00 ;; simple 300000 -1": matchesWithDailyDefect,
	"calendar Europe/London 1711843200000 10 daily:01:15:00-01:45:00 ;; simple 900000 -1":       matchesWithDailyDefect,
	"calendar Europe/London 1729983600000 12 daily:01:15:00-01:45:00 ;; simple 900000 -1":       matchesWithDailyDefect,
	"calendar America/New_York 1730606400000 12 daily:00:45:00-01:15:00 ;; simple 900000 -1":    matchesWithDailyDefect,
	"calendar UTC 1718063999997 4 daily:12:00-23:59:59:998 ;; simple 1 -1":                      matchesWithDailyDefect,
	"calendar UTC -86400000 3 daily:01:00-02:00 ;; simple 3600000 -1":                           matchesWithDailyDefect,

	// Spring forward. New York 2024-03-10: 02:00 does not exist, the window is 03:00–03:00
	// that day; on 03-11 Quartz starts at 03:00 again.
	"daily America/New_York 1710003600000 02:00:00 03:00:00 1,2,3,4,5,6,7 15 MINUTE 8": wantTimes(
		"2024-03-10T07:00Z", "2024-03-11T06:00Z", "2024-03-11T06:15Z", "2024-03-11T06:30Z", "2024-03-11T06:45Z",
		"2024-03-11T07:00Z", "2024-03-12T06:00Z", "2024-03-12T06:15Z"),
	// Quartz skips 03-11 entirely (its 03:30 is past the 02:30 window).
	"daily America/New_York 1710003600000 02:30:00 02:30:00 1,2,3,4,5,6,7 1 HOUR 3": wantTimes(
		"2024-03-10T07:30Z", "2024-03-11T06:30Z", "2024-03-12T06:30Z"),
	// Lord Howe's 30-minute gap: 02:15 becomes 02:45 on 10-06; Quartz then skips 10-07.
	"daily Australia/Lord_Howe 1728091800000 02:15:00 02:15:00 1,2,3,4,5,6,7 1 HOUR 3": wantTimes(
		"2024-10-05T15:45Z", "2024-10-06T15:15Z", "2024-10-07T15:15Z"),
	// Sundays only: Quartz carries 03:00 a whole week, to 03-17, and fires only at 03:00 there.
	"daily America/New_York 1709960400000 02:00:00 03:00:00 1 30 MINUTE 6": wantTimes(
		"2024-03-10T07:00Z", "2024-03-17T06:00Z", "2024-03-17T06:30Z", "2024-03-17T07:00Z", "2024-03-24T06:00Z",
		"2024-03-24T06:30Z"),
	// DO_NOTHING at 12:00 on the gap day: the next slot is 02:00 on 03-11, not 03:00.
	"misfire America/New_York 1709269200000 - 1710086400000 0 2 6 none ;; daily 02:00:00 03:00:00 1,2,3,4,5,6,7 20 MINUTE": wantMisfire(
		"2024-03-11T06:00Z", "2024-03-11T06:20Z", "2024-03-11T06:40Z", "2024-03-11T07:00Z",
		"2024-03-12T06:00Z", "2024-03-12T06:20Z", "2024-03-12T06:40Z"),
	// FIRE_ONCE_NOW at 03:10 on the gap day, then the same.
	"misfire America/New_York 1709269200000 - 1710054600000 0 1 6 none ;; daily 02:00:00 03:00:00 1,2,3,4,5,6,7 20 MINUTE": wantMisfire(
		"2024-03-10T07:10Z", "2024-03-11T06:00Z", "2024-03-11T06:20Z", "2024-03-11T06:40Z",
		"2024-03-11T07:00Z", "2024-03-12T06:00Z", "2024-03-12T06:20Z"),

	// Day-of-week numbers 0 and 8.
	"daily America/New_York 1709528400000 09:00:00 17:00:00 0 1 HOUR 12": wantErr("day of week 0"),
	"daily America/New_York 1709528400000 09:00:00 17:00:00 8 4 HOUR 8":  wantErr("day of week 8"),

	// A calendar that excludes every day: no fire time at all.
	"calendar UTC 1718020800000 3 weekly:1,2,3,4,5,6,7 ;; simple 86400000 -1": noFireQuartzPastHorizon,

	// Before the epoch. 1969-12-31 is a Wednesday: the default weekly calendar lets it fire.
	"calendar UTC -86400000 3 weekly ;; simple 3600000 -1": quartzRejects("timeStamp must be greater 0",
		wantTimes("1969-12-31T00:00Z", "1969-12-31T01:00Z", "1969-12-31T02:00Z")),
	// The holiday is the whole first day.
	"calendar UTC -86400000 3 holiday:1969-12-31 ;; simple 3600000 -1": quartzRejects("timeStamp must be greater 0",
		wantTimes("1970-01-01T00:00Z", "1970-01-01T01:00Z", "1970-01-01T02:00Z")),
	// 1970-01-01 is a Thursday; weekly:2 excludes Mondays.
	"calendar UTC 0 3 weekly:2 ;; simple 3600000 -1": quartzRejects("timeStamp must be greater 0",
		wantTimes("1970-01-01T00:00Z", "1970-01-01T01:00Z", "1970-01-01T02:00Z")),
}

// wantTimes requires exactly these fire times (UTC, to the minute).
func wantTimes(times ...string) answer {
	want := make([]int64, len(times))
	for i, s := range times {
		tm, err := time.Parse("2006-01-02T15:04Z07:00", s)
		if err != nil {
			panic(err) // a typo in sundialAnswers
		}
		want[i] = tm.UnixMilli()
	}
	return func(got Result, _ Expected) string {
		if got.Err != nil || !slices.Equal(millisOf(got), want) {
			return fmt.Sprintf("fire times %s (error %s), want %s",
				strings.Join(fmtMillis(millisOf(got)), " "), errText(got.Err), strings.Join(fmtMillis(want), " "))
		}
		return ""
	}
}

// wantMisfire requires that the misfire instruction leaves next as the next fire time, and
// that times follow it.
func wantMisfire(next string, times ...string) answer {
	wantNext, rest := wantTimes(next), wantTimes(times...)
	return func(got Result, quartz Expected) string {
		if !got.Misfire || got.Next.IsZero() {
			return "NEXT " + got.stampOrNone() + ", want " + next
		}
		if msg := wantNext(Result{Times: []time.Time{got.Next}}, quartz); msg != "" {
			return "NEXT: " + msg
		}
		return rest(got, quartz)
	}
}

// wantErr requires an error mentioning substr.
func wantErr(substr string) answer {
	return func(got Result, _ Expected) string {
		if got.Err == nil || !strings.Contains(got.Err.Error(), substr) {
			return fmt.Sprintf("error %s, want one mentioning %q", errText(got.Err), substr)
		}
		return ""
	}
}

// quartzRejects requires Quartz's answer to be the error msg (the reason for the divergence)
// and Sundial's to satisfy sundial.
func quartzRejects(msg string, sundial answer) answer {
	return func(got Result, quartz Expected) string {
		if quartz.Err != msg {
			return fmt.Sprintf("Quartz answers error %q, the divergence is that it fails with %q", quartz.Err, msg)
		}
		return sundial(got, quartz)
	}
}

// noFireQuartzPastHorizon requires no fire time from Sundial, and that Quartz's "fires" all
// lie more than a century after the case's start: past the horizon where both give up (Quartz
// at the current year + 100, schedule at the search start's year + 100), so each is the
// rejected candidate Quartz lists by mistake and not a time the calendar allows.
func noFireQuartzPastHorizon(got Result, quartz Expected) string {
	if got.Err != nil || len(got.Times) != 0 {
		return fmt.Sprintf("fire times %s (error %s), want none", strings.Join(fmtMillis(millisOf(got)), " "), errText(got.Err))
	}
	startMs, err := strconv.ParseInt(strings.Fields(got.Input)[2], 10, 64)
	if err != nil {
		return err.Error()
	}
	horizon := time.UnixMilli(startMs).UTC().Year() + 100
	for _, ms := range quartz.Times {
		if y := time.UnixMilli(ms).UTC().Year(); y <= horizon {
			return fmt.Sprintf("Quartz's fire in %d is not past the horizon %d", y, horizon)
		}
	}
	return ""
}

// quartzDailyDefect is Quartz's DailyCalendar defect written as one more calendar of the chain:
// an inverted DailyCalendar that includes only 00:00:00.001–23:59:59.998 excludes exactly the
// 00:00:00.000 and 23:59:59.999 a Quartz DailyCalendar wrongly excludes (every time involved
// is whole milliseconds, and the chain shares one zone).
const quartzDailyDefect = "daily!:00:00:00:001-23:59:59:998"

// matchesWithDailyDefect requires that the case, with Quartz's DailyCalendar defect added to
// its calendar chain, gives exactly Quartz's answer: that proves the defect is the whole
// difference.
func matchesWithDailyDefect(got Result, quartz Expected) string {
	f := strings.Fields(got.Input)
	sep := slices.Index(f, ";;")
	if f[0] != "calendar" || sep < 5 || !slices.ContainsFunc(strings.Split(strings.Join(f[4:sep], " "), "+"),
		func(c string) bool { return strings.HasPrefix(c, "daily:") }) {
		return "not a calendar case with a (non-inverted) DailyCalendar"
	}
	f[sep-1] += "+" + quartzDailyDefect
	if diff := Compare(Evaluate(strings.Join(f, " ")), quartz); diff != "" {
		return "with Quartz's DailyCalendar defect added: " + diff
	}
	return ""
}
