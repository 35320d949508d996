package quartz_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/importer/quartz"
	"github.com/sundial-scheduler/sundial/importer/quartz/quartztest"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// now is before every fire time of the generated store (2027), so previews apply no misfire.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func readPlan(t *testing.T, from string, opt quartz.Options) (*importer.Plan, error) {
	t.Helper()
	db, err := quartz.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return quartz.Read(context.Background(), db, opt)
}

func mustPlan(t *testing.T, from string, opt quartz.Options) *importer.Plan {
	t.Helper()
	p, err := readPlan(t, from, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func printed(t *testing.T, p *importer.Plan, applied bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Print(&b, applied); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// notImported are the MAIN scheduler's triggers the import must leave out, with the start
// of the reason it must give.
var notImported = map[string]string{
	"ops/odd-days": "its calendar odd-days is not imported",
	"ops/tagged":   "a BLOB trigger",
}

// TestImportQuartz imports the store the real Quartz 2.3.2 wrote into PostgreSQL and into
// MariaDB: the dry run's plan, the objects an apply creates, each imported trigger's next 12
// fire times against Quartz's own, and a second apply that changes nothing.
func TestImportQuartz(t *testing.T) {
	for _, d := range quartztest.Dialects {
		t.Run(d, func(t *testing.T) { testImportQuartz(t, d) })
	}
}

func testImportQuartz(t *testing.T, dialect string) {
	ctx := context.Background()
	from := quartztest.Create(t, dialect)
	opt := quartz.Options{SchedName: "MAIN", Zone: quartztest.Zone, Source: "test"}
	st := teststore.Open(t, "sqlite")
	s, err := sundial.New(sundial.Config{Store: st, Clock: clock.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}

	p := mustPlan(t, from, opt)
	if err := importer.Run(ctx, s, p, false); err != nil {
		t.Fatal(err)
	}
	out := printed(t, p, false)
	for _, want := range []string{
		"create    calendar business-days: holiday:2027-01-07+weekly:1,7+annual:12-24",
		"create    calendar annual: annual:01-01,01-08,05-01,12-25",
		"create    calendar holidays: holiday:2027-01-01,2027-01-06,2027-04-05, zone Europe/Paris",
		// WeeklyCalendar(TimeZone) excludes no day in Quartz 2.3.2 (only the other
		// constructors exclude the weekend); its zone is kept, not its trigger's.
		"create    calendar ny-weekends: weekly:, zone America/New_York",
		// A calendar without a TimeZone is read in the JVM's default zone (--zone).
		"create    calendar weekends: weekly:1,7, zone Europe/Paris",
		`create    trigger ops/zone-clash: cron "0 0 9 * * ?" Europe/Paris, calendar ny-weekends`,
		"create    calendar lunch: daily:12:00:00:000-13:30:00:500",
		// A chain across zones: each zone's part of the chain is a calendar of its own, the
		// base of the one before, read in its zone (the trigger's fires match Quartz's below).
		"create    calendar ny-lunch-tokyo-weekend: daily:12:00:00:000-14:00:00:000, base ny-lunch-tokyo-weekend~2, zone America/New_York",
		"create    calendar ny-lunch-tokyo-weekend~2: weekly:1,7, zone Asia/Tokyo",
		"create    calendar office-hours: daily!:08:00:00:000-18:00:00:000",
		"create    calendar month-ends: monthly:1,15,31",
		"create    calendar nights: cron:* * 0-6 ? * *",
		"Paused trigger groups: billing, later",
		`create    job reports/nightly-report: "the nightly report", handler Gen$ReportJob, allow`,
		"create    job billing/ledger: handler Gen$SerialJob, buffer_all",
		`create    trigger reports/weekday-halfhours: cron "0 0/30 9-17 ? * MON-FRI" Europe/Paris, calendar holidays, priority 7, misfire do_nothing, next 2027-01-04 09:00:00 CET, description "every half hour"`,
		// A trigger's own job data is kept, to be merged over its job's at each fire.
		`create    trigger ops/with-data: cron "0 0 3 * * ?" Europe/Paris, misfire smart, next 2027-01-05 03:00:00 CET, data {"mode":"full"}`,
		"create    trigger billing/every-90-min: every 1h30m0s, calendar weekends, priority 9, misfire reschedule_next_remaining, paused, next 2027-01-04 13:30:00 CET",
		"calendar odd-days: class Gen$OddDaysCalendar is not one of Quartz's own calendars",
		"trigger ops.two-hourly: priority 0: Sundial reads priority 0 as its default, 5",
		"Summary: calendars: 12 create; jobs: 4 create; triggers: 21 create; not imported: 4",
		"Note: 4 triggers and calendars without a zone of their own are read in Europe/Paris (--zone)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run printed\n%s\nwant a line with %q", out, want)
		}
	}
	for key, reason := range notImported {
		g, n, _ := strings.Cut(key, "/")
		if !strings.Contains(out, "trigger "+g+"."+n+": "+reason) {
			t.Errorf("the dry run printed\n%s\nwant trigger %s not imported: %s", out, key, reason)
		}
	}
	if js, _ := st.JobList(ctx, store.JobFilter{Limit: 10}); len(js) != 0 {
		t.Fatalf("the dry run stored %d jobs", len(js))
	}

	p = mustPlan(t, from, opt)
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	checkJobs(t, st)
	// Each calendar keeps its Quartz zone, its own or the JVM's default (--zone).
	for name, zone := range map[string]string{"ny-weekends": "America/New_York", "weekends": "Europe/Paris", "nights": "Europe/Paris"} {
		if c, err := st.CalendarGet(ctx, name); err != nil || c.Zone != zone {
			t.Errorf("calendar %s stored as %+v (%v), want zone %s", name, c, err, zone)
		}
	}
	checked := 0
	for _, a := range quartztest.Answers(t, dialect) {
		if a.Sched != "MAIN" {
			continue
		}
		key := a.Group + "/" + a.Name
		row, err := st.TriggerGetByKey(ctx, a.Group, a.Name)
		if _, skip := notImported[key]; skip {
			if err == nil {
				t.Errorf("trigger %s was imported; it must not be", key)
			}
			continue
		}
		if err != nil {
			t.Errorf("trigger %s: %v", key, err)
			continue
		}
		if paused := row.State == store.TriggerPaused; paused != (a.State == "PAUSED") {
			t.Errorf("trigger %s: state %s, Quartz's %s", key, row.State, a.State)
		}
		pv, err := s.Engine().PreviewTrigger(ctx, row, now, len(a.Next)+1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fireList(pv.Fires, row.TimeZone), fireList(a.Next, row.TimeZone); !strings.HasPrefix(got, want) || len(pv.Fires) < len(a.Next) {
			t.Errorf("trigger %s fires\n got %s\nwant %s (Quartz)", key, got, want)
		}
		checked++
	}
	if checked != 21 {
		t.Errorf("compared %d triggers with Quartz, want 21", checked)
	}
	before := snapshot(t, st)

	p = mustPlan(t, from, opt)
	if err := importer.Run(ctx, s, p, true); err != nil {
		t.Fatal(err)
	}
	if out := printed(t, p, true); !strings.Contains(out, "Summary: calendars: 12 unchanged; jobs: 4 unchanged; triggers: 21 unchanged;") {
		t.Errorf("the second apply printed\n%s\nwant everything unchanged", out)
	}
	if after := snapshot(t, st); after != before {
		t.Errorf("the second apply changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

func fireList(ts []time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" {
		loc = time.UTC
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.In(loc).Format("2006-01-02T15:04:05.000Z07:00"))
	}
	return strings.Join(out, " ")
}

// checkJobs checks the jobs' fields and the triggers' stored state the import carried over.
func checkJobs(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	report, err := st.JobGetByKey(ctx, "reports", "nightly-report")
	if err != nil {
		t.Fatal(err)
	}
	if report.Handler != "Gen$ReportJob" || !report.RequestsRecovery || report.Concurrency != store.ConcurrencyAllow ||
		fmt.Sprint(report.Data) != "map[format:pdf region:eu-west]" {
		t.Errorf("nightly-report stored as %+v", report)
	}
	ledger, err := st.JobGetByKey(ctx, "billing", "ledger")
	if err != nil {
		t.Fatal(err)
	}
	if ledger.Concurrency != store.ConcurrencySerial || !ledger.PersistData || fmt.Sprint(ledger.Data) != "map[batch:500]" {
		t.Errorf("ledger stored as %+v", ledger)
	}
	if _, err := st.JobGetByKey(ctx, "DEFAULT", "manual-export"); err != nil {
		t.Errorf("the durable job without triggers: %v", err)
	}
	if tr, err := st.TriggerGetByKey(ctx, "ops", "with-data"); err != nil || fmt.Sprint(tr.Data) != "map[mode:full]" {
		t.Errorf("the trigger with job data of its own: %+v, %v; want its data kept", tr, err)
	}
	if tr, err := st.TriggerGetByKey(ctx, "reports", "weekday-halfhours"); err != nil || tr.Description != "every half hour" {
		t.Errorf("the trigger with a description: %+v, %v; want it kept", tr, err)
	}
	for key, want := range map[string]string{
		// times fired, previous fire (ms, as Quartz stored it), priority, misfire
		"billing/every-90-min":  "3 1799060400000 9 reschedule_next_remaining",
		"billing/ten-times":     "2 1799053200000 5 reschedule_now_existing",
		"ops/every-2-days":      "4 1799740800000 5 do_nothing",
		"ops/office-45-min":     "5 1799068500000 3 fire_now",
		"ops/paused-cron":       "0 0 5 smart",
		"reports/monthly-cal":   "0 0 1 ignore",
		"billing/next-existing": "0 0 5 reschedule_next_existing",
	} {
		g, n, _ := strings.Cut(key, "/")
		row, err := st.TriggerGetByKey(ctx, g, n)
		if err != nil {
			t.Errorf("trigger %s: %v", key, err)
			continue
		}
		if got := fmt.Sprintf("%d %d %d %s", row.TimesFired, row.PrevFireAt, row.Priority, row.MisfirePolicy); got != want {
			t.Errorf("trigger %s: times fired, previous fire, priority, misfire %q, want %q", key, got, want)
		}
	}
	groups, err := st.PausedGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(groups, "billing") || !slices.Contains(groups, "later") {
		t.Errorf("paused groups %v, want billing and later", groups)
	}
}

// snapshot is every stored calendar, job and trigger, updated times and versions included.
func snapshot(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	cals, err := st.CalendarList(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cals {
		fmt.Fprintf(&b, "%+v\n", *c)
	}
	jobs, err := st.JobList(ctx, store.JobFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Fprintf(&b, "%+v\n", *j)
		trs, err := st.TriggerList(ctx, store.TriggerFilter{JobID: j.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			fmt.Fprintf(&b, "  %+v\n", *tr)
		}
	}
	return b.String()
}

// TestImportQuartzLegacy reads a scheduler under another table prefix whose store keeps job
// data as serialized JobDataMaps (useProperties=false): string maps are imported, a map with
// an Integer is not, and its trigger with it.
func TestImportQuartzLegacy(t *testing.T) {
	from := quartztest.Create(t, "mysql")
	p := mustPlan(t, from, quartz.Options{Prefix: "LEGACY_"})
	if len(p.Jobs) != 1 || p.Jobs[0].Name != "archive" || fmt.Sprint(p.Jobs[0].Data) != "map[bucket:s3://archive days:30]" {
		t.Fatalf("jobs %v", p.Jobs)
	}
	if len(p.Jobs[0].Triggers) != 1 || p.Jobs[0].Triggers[0].TimeZone != "Europe/Paris" {
		t.Errorf("archive's triggers %v", p.Jobs[0].Triggers)
	}
	var got []string
	for _, u := range p.Unmapped {
		got = append(got, u.Item+": "+u.Reason)
	}
	for _, want := range []string{
		`job legacy.counter: job data: job data "limit" is a java.lang.Integer, not a string`,
		"trigger legacy.counter-hourly: its job legacy.counter is not imported",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("not imported %q\nwant one starting %q", got, want)
		}
	}
}

// The tables of one prefix hold two schedulers: without --sched-name the import names them
// and stops; without --zone it names a row that needs it and stops.
func TestImportQuartzAsks(t *testing.T) {
	from := quartztest.Create(t, "postgres")
	if _, err := readPlan(t, from, quartz.Options{Zone: quartztest.Zone}); err == nil ||
		!strings.Contains(err.Error(), "several schedulers (MAIN, OTHER): choose one with --sched-name") {
		t.Errorf("without --sched-name: %v", err)
	}
	if _, err := readPlan(t, from, quartz.Options{SchedName: "MAIN"}); err == nil || !strings.Contains(err.Error(), "give it with --zone") {
		t.Errorf("without --zone: %v", err)
	}
	if _, err := readPlan(t, from, quartz.Options{SchedName: "NOPE", Zone: quartztest.Zone}); err == nil || !strings.Contains(err.Error(), `no scheduler "NOPE"`) {
		t.Errorf("an unknown scheduler: %v", err)
	}
	if _, err := readPlan(t, from, quartz.Options{Prefix: "X; DROP TABLE y", Zone: quartztest.Zone}); err == nil {
		t.Error("a table prefix with SQL in it was accepted")
	}
	// OTHER has a simple trigger only: no zone needed.
	p := mustPlan(t, from, quartz.Options{SchedName: "OTHER"})
	if len(p.Jobs) != 1 || p.Jobs[0].Name != "elsewhere" {
		t.Errorf("OTHER's jobs %v", p.Jobs)
	}
}
