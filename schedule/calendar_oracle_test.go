package schedule

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// calCase is a parsed `calendar` oracle line: calendar TZ START N CALSPEC ;; TRIGGER.
type calCase struct {
	loc     *time.Location
	start   time.Time
	n       int
	spec    string
	trigger []string
}

func calParseCase(t *testing.T, input string) (calCase, bool) {
	t.Helper()
	f := strings.Fields(input)
	sep := -1
	for i, tok := range f {
		if tok == ";;" {
			sep = i
			break
		}
	}
	if f[0] != "calendar" || len(f) < 5 || sep < 4 {
		return calCase{}, false
	}
	loc, err := LoadZone(f[1])
	if err != nil {
		return calCase{}, false
	}
	ms, err1 := strconv.ParseInt(f[2], 10, 64)
	n, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return calCase{}, false
	}
	return calCase{loc, time.UnixMilli(ms).In(loc), n, strings.Join(f[4:sep], " "), f[sep+1:]}, true
}

// calOracleCases returns the `calendar` blocks of quartz-expected.txt and, when present,
// extra-expected.txt (the cases added while writing the calendars).
func calOracleCases(t *testing.T) []oracleCase {
	var out []oracleCase
	files := []string{"quartz-expected.txt"}
	if _, err := os.Stat("testdata/extra-expected.txt"); err == nil {
		files = append(files, "extra-expected.txt")
	}
	for _, name := range files {
		for _, c := range loadOracle(t, name) {
			if c.Kind() == "calendar" {
				out = append(out, c)
			}
		}
	}
	return out
}

// calDivergence is a deliberate difference from Quartz 2.3.2 in one oracle case.
type calDivergence int

const (
	// calMidnight: Quartz's non-inverted DailyCalendar also excludes 00:00:00.000 and
	// 23:59:59.999 of every day, whatever its range, because it compares with the day's bounds
	// strictly. Sundial excludes exactly the range. The test checks that emulating the defect
	// (calQuartzDaily) reproduces Quartz's answer exactly, so nothing else differs.
	calMidnight calDivergence = iota + 1
	// calHorizon: the calendar excludes every fire up to the horizon. Quartz's
	// computeFirstFireTime gives up but leaves the candidate past its year horizon in
	// nextFireTime, and computeFireTimes lists it (a year that depends on when the oracle ran);
	// Sundial reports no fire time.
	calHorizon
	// calPreEpoch: Quartz's BaseCalendar.isTimeIncluded throws "timeStamp must be greater 0"
	// for instants at or before 1970-01-01T00:00Z (holiday, weekly, monthly and annual
	// calendars check it; daily and cron calendars do not). That is an artifact of Quartz's
	// millisecond validation, not a rule about calendars: Sundial's calendars answer for any
	// instant, and the test requires the answer in calPreEpochWant.
	calPreEpoch
)

// calPreEpochWant is Sundial's answer for the calPreEpoch cases.
var calPreEpochWant = map[string][]int64{
	// 1969-12-31 is a Wednesday: the default weekly calendar lets it fire.
	"calendar UTC -86400000 3 weekly ;; simple 3600000 -1": {-86400000, -82800000, -79200000},
	// The holiday is the whole first day.
	"calendar UTC -86400000 3 holiday:1969-12-31 ;; simple 3600000 -1": {0, 3600000, 7200000},
	// 1970-01-01 is a Thursday; weekly:2 excludes Mondays.
	"calendar UTC 0 3 weekly:2 ;; simple 3600000 -1": {0, 3600000, 7200000},
}

// calDivergences names every oracle case where Sundial differs from Quartz on purpose.
var calDivergences = map[string]calDivergence{
	// Midnight is a fire time of these triggers, and these calendars exclude it in Quartz.
	"calendar UTC 1717999200000 14 daily:08:00:00-17:00:00 ;; cron 0 0 * * * ?":                 calMidnight,
	"calendar UTC 1718020800000 3 daily:12:00:00-13:00:00 ;; cron 0 0 0 * * ?":                  calMidnight,
	"calendar UTC 1718060400000 6 daily:01:00:00-02:00:00 ;; simple 1800000 -1":                 calMidnight,
	"calendar UTC 1718063999998 4 daily:12:00:00-13:00:00 ;; simple 1 -1":                       calMidnight,
	"calendar America/New_York 1710046800000 10 daily:02:00:00-03:00:00 ;; simple 900000 -1":    calMidnight,
	"calendar America/New_York 1710046800000 10 daily:02:30:00-03:30:00 ;; simple 900000 -1":    calMidnight,
	"calendar America/New_York 1710046800000 12 daily:02:15:00-02:45:00 ;; cron 0 0/15 * * * ?": calMidnight,
	"calendar America/New_York 1730606400000 14 daily:01:00:00-01:59:59 ;; simple 900000 -1":    calMidnight,
	"calendar America/New_York 1730606400000 10 daily:00:30:00-01:30:00 ;; cron 0 0/15 * * * ?": calMidnight,
	"calendar America/New_York 1730606400000 10 daily:01:30:00-02:30:00 ;; simple 900000 -1":    calMidnight,
	// extra-expected.txt
	"calendar Australia/Lord_Howe 1728135000000 12 daily:02:00:00-02:45:00 ;; simple 900000 -1": calMidnight,
	"calendar Australia/Lord_Howe 1728135000000 12 daily:02:05:00-02:20:00 ;; simple 300000 -1": calMidnight,
	"calendar Australia/Lord_Howe 1712408400000 14 daily:01:30:00-01:50:00 ;; simple 300000 -1": calMidnight,
	"calendar Europe/London 1711843200000 10 daily:01:15:00-01:45:00 ;; simple 900000 -1":       calMidnight,
	"calendar Europe/London 1729983600000 12 daily:01:15:00-01:45:00 ;; simple 900000 -1":       calMidnight,
	"calendar America/New_York 1730606400000 12 daily:00:45:00-01:15:00 ;; simple 900000 -1":    calMidnight,
	"calendar UTC 1718063999997 4 daily:12:00-23:59:59:998 ;; simple 1 -1":                      calMidnight,
	"calendar UTC -86400000 3 daily:01:00-02:00 ;; simple 3600000 -1":                           calMidnight,
	"calendar UTC 1718020800000 3 weekly:1,2,3,4,5,6,7 ;; simple 86400000 -1":                   calHorizon,
	"calendar UTC -86400000 3 weekly ;; simple 3600000 -1":                                      calPreEpoch,
	"calendar UTC -86400000 3 holiday:1969-12-31 ;; simple 3600000 -1":                          calPreEpoch,
	"calendar UTC 0 3 weekly:2 ;; simple 3600000 -1":                                            calPreEpoch,
}

// calQuartzDaily adds Quartz's DailyCalendar defect to a calendar chain: every non-inverted
// DailyCalendar of the chain also excludes 00:00:00.000 and 23:59:59.999 of each local day.
type calQuartzDaily struct{ cal Calendar }

func (q calQuartzDaily) Includes(t time.Time) bool {
	if !q.cal.Includes(t) {
		return false
	}
	for c := q.cal; c != nil; c = c.(calLinker).base() {
		d, ok := c.(*DailyCalendar)
		if !ok || d.Invert {
			continue
		}
		loc := calLocation(d.Location)
		y, m, day := t.In(loc).Date()
		if t.Equal(javaWallTime(loc, y, m, day, 0, 0, 0, 0)) || t.Equal(javaWallTime(loc, y, m, day, 23, 59, 59, 999e6)) {
			return false
		}
	}
	return true
}

// calRunTrigger returns the first cc.n fire times of the case's trigger under cal, as
// Quartz's computeFireTimes lists them: ComputeFirst, then Triggered repeatedly. ok is false
// when the trigger cannot be built here.
func calRunTrigger(cc calCase, cal Calendar) (times []int64, ok bool) {
	sched, err := calTriggerSchedule(cc)
	if err != nil {
		return nil, false
	}
	tr := &Trigger{Schedule: sched, Start: cc.start}
	if err := tr.Validate(); err != nil {
		return nil, false
	}
	times = []int64{}
	if _, err := tr.ComputeFirst(cal); err != nil {
		return times, true
	}
	for len(times) < cc.n && !tr.Next.IsZero() {
		times = append(times, tr.Next.UnixMilli())
		tr.Triggered(cal)
	}
	return times, true
}

// calTriggerSchedule builds the schedule after ";;".
func calTriggerSchedule(cc calCase) (Schedule, error) {
	if cc.trigger[0] == "cron" {
		return ParseCron(strings.Join(cc.trigger[1:], " "), cc.loc)
	}
	return parseIntervalSchedule(cc.trigger, cc.loc)
}

// TestCalendarOracle runs the `calendar` cases of the oracle files and requires Quartz's
// answer exactly, except for the named divergences.
func TestCalendarOracle(t *testing.T) {
	checked, matched := 0, 0
	seen := map[string]bool{}
	for _, oc := range calOracleCases(t) {
		cc, ok := calParseCase(t, oc.Input)
		if !ok {
			if !strings.HasPrefix(oc.Err, "input:") {
				t.Errorf("%s: cannot read the case line", oc.Input)
			}
			continue
		}
		seen[oc.Input] = true
		cal, err := ParseCalendarSpec(cc.spec, cc.loc)
		if calDivergences[oc.Input] == calPreEpoch {
			got, ok := calRunTrigger(cc, cal)
			if want := calPreEpochWant[oc.Input]; err != nil || !ok || !slices.Equal(got, want) {
				t.Errorf("%s: got %v (%v), want %v", oc.Input, got, err, want)
			}
			if oc.Err == "" {
				t.Errorf("%s: listed as a divergence but Quartz answers %v", oc.Input, oc.Times)
			}
			checked++
			continue
		}
		if oc.Err != "" {
			if err == nil && !strings.HasPrefix(oc.Err, "input: unknown trigger") {
				t.Errorf("%s: no error, Quartz says %s", oc.Input, oc.Err)
			}
			checked++
			matched++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", oc.Input, err)
			continue
		}
		quirky := Calendar(nil)
		if cal != nil {
			quirky = calQuartzDaily{cal}
		}
		div := calDivergences[oc.Input]
		got, ok := calRunTrigger(cc, cal)
		if !ok {
			t.Errorf("%s: cannot build the trigger", oc.Input)
			continue
		}
		checked++
		switch div {
		case calMidnight:
			if slices.Equal(got, oc.Times) {
				t.Errorf("%s: listed as a divergence but matches Quartz", oc.Input)
			}
			if emu, _ := calRunTrigger(cc, quirky); !slices.Equal(emu, oc.Times) {
				t.Errorf("%s: with Quartz's midnight defect emulated:\n got %v\nwant %v", oc.Input, emu, oc.Times)
			}
		case calHorizon:
			if len(got) != 0 {
				t.Errorf("%s: got %v, want no fire time", oc.Input, got)
			}
			for _, ms := range oc.Times {
				if y := time.UnixMilli(ms).UTC().Year(); y <= cc.start.Year()+horizonYears {
					t.Errorf("%s: Quartz's fire in %d is not past the horizon", oc.Input, y)
				}
			}
		default:
			if !slices.Equal(got, oc.Times) {
				t.Errorf("%s:\n got %v\nwant %v", oc.Input, got, oc.Times)
			} else {
				matched++
			}
		}
	}
	for in := range calDivergences {
		if !seen[in] {
			t.Errorf("divergence %q is not an oracle case", in)
		}
	}
	t.Logf("%d calendar cases checked: %d identical to Quartz, %d named divergences", checked, matched, len(calDivergences))
	if checked < 100 {
		t.Errorf("only %d cases checked", checked)
	}
}
