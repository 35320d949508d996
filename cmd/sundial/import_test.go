package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/importer/xxljob/xxltest"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestImportXXLJob runs `sundial import xxl-job` on an XXL-JOB 2.4 and a 3.5 database (the
// README's "Importing XXL-JOB jobs" commands): the dry run prints the plan and writes
// nothing, --apply creates it on each of Sundial's databases, and a second --apply changes
// nothing.
func TestImportXXLJob(t *testing.T) {
	for _, v := range xxltest.Versions {
		for _, dialect := range testdb.Dialects {
			t.Run(v+"/"+dialect, func(t *testing.T) { testImportXXLJob(t, v, dialect) })
		}
	}
}

// Bad input exits 2 with a line naming it; a database with CRON jobs and no --zone is
// refused before anything is written.
func TestImportXXLJobInput(t *testing.T) {
	if code, _, errOut := runCLI(t, "", "import", "xxl-job", "--db", "x.db"); code != 2 || !strings.Contains(errOut, "--from is required") {
		t.Errorf("without --from: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "import", "xxl-job", "--from", "postgres://a@b/c"); code != 2 || !strings.Contains(errOut, "want mysql://") {
		t.Errorf("--from postgres: exit %d, %s", code, errOut)
	}
	from, xdb := xxltest.Create(t, "2.4")
	xxltest.Fill(t, xdb, "2.4", time.Now())
	code, _, errOut := runCLI(t, "", "import", "xxl-job", "--from", from, "--db", testdb.DSN(t, "sqlite"))
	if code != 1 || !strings.Contains(errOut, "give it with --zone") {
		t.Errorf("without --zone: exit %d, %s", code, errOut)
	}
}

func testImportXXLJob(t *testing.T, version, dialect string) {
	ctx := context.Background()
	from, xdb := xxltest.Create(t, version)
	filled := time.Now()
	xxltest.Fill(t, xdb, version, filled)
	dsn := testdb.DSN(t, dialect)
	st := teststore.OpenDSN(t, dsn)
	args := []string{"import", "xxl-job", "--from", from, "--zone", "Asia/Shanghai", "--db", dsn}

	code, out, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("the dry run printed:\n%s", out)
	gen := map[string]string{"2.4": "2.x", "3.5": "3.5"}[version]
	wantLines := []string{
		`  create    app order-exec: "Orders", auto, protocol xxl-job ` + gen,
		`  create    app report-exec: "Reports", manual http://10.0.0.5:9999,http://10.0.0.6:9999, protocol xxl-job ` + gen,
		`  create    job order-exec/xxl-1: "Nightly orders (author alice)", app order-exec handler orderJob routing first, buffer_all, retries 2, timeout 30s, alarm ops@example.com,dev@example.com, children order-exec/xxl-2,order-exec/xxl-3, params "p=1"`,
		`    create    trigger order-exec/xxl-1#1: cron "0 0 2 * * ?" Asia/Shanghai, misfire do_nothing, next `,
		`    create    trigger order-exec/xxl-3#1: every 30s, misfire reschedule_next_remaining, next `,
		`    create    trigger order-exec/xxl-4#1: every 1h0m0s, misfire fire_now, paused, next `,
		`  create    job order-exec/xxl-5: "Cleanup script (author carol)", app order-exec handler shell routing consistent_hash, buffer_all, retries 1, script with 3 versions`,
		`  create    job report-exec/xxl-7: "Run by hand", app report-exec handler manualJob routing least_recently_used, buffer_all, no trigger`,
		`  xxl_job_info 11 "Fixed delay": schedule type FIX_DELAY: XXL-JOB declares it but never implemented it; the job is imported without a trigger`,
		`  xxl_job_info 13 "No handler": a BEAN job without a JobHandler cannot run`,
		"Summary: apps: 2 create; jobs: 12 create; triggers: 9 create; not imported: ",
		"Dry run: nothing was written. Run again with --apply to import.",
	}
	if version == "3.5" {
		wantLines = append(wantLines, `  xxl_job_group 1 (order-exec): access token: it is XXL-JOB's public default`)
	}
	for _, want := range wantLines {
		if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("the dry run printed\n%s\nwant a line starting %q", out, want)
		}
	}
	if js, err := st.JobList(ctx, store.JobFilter{Limit: 100}); err != nil || len(js) != 0 {
		t.Fatalf("after the dry run: %d jobs (%v), want none", len(js), err)
	}

	code, out, errOut = runCLI(t, "", append(args, "--apply")...)
	if code != 0 || !strings.Contains(out, "\nApplied.\n") {
		t.Fatalf("--apply: exit %d\n%s%s", code, out, errOut)
	}
	checkImportedXXL(t, st, filled, gen)
	before := snapshot(t, st)

	code, out, errOut = runCLI(t, "", append(args, "--apply")...)
	if code != 0 {
		t.Fatalf("second --apply: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "Summary: apps: 2 unchanged; jobs: 12 unchanged; triggers: 9 unchanged;") {
		t.Errorf("the second --apply printed\n%s\nwant everything unchanged", out)
	}
	if after := snapshot(t, st); after != before {
		t.Errorf("the second --apply changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

// checkImportedXXL checks what the import stored from xxltest's fixture.
func checkImportedXXL(t *testing.T, st store.Store, filled time.Time, gen string) {
	t.Helper()
	ctx := context.Background()
	apps, err := st.AppList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range apps {
		got = append(got, fmt.Sprintf("%s %q %s %v %s %s", a.Name, a.Title, a.AddressMode, a.Addresses, a.Protocol, a.ProtocolVersion))
	}
	if g, w := strings.Join(got, "; "), `order-exec "Orders" auto [] xxl-job `+gen+`; report-exec "Reports" manual [http://10.0.0.5:9999 http://10.0.0.6:9999] xxl-job `+gen; g != w {
		t.Errorf("apps\n got %s\nwant %s", g, w)
	}
	job := func(group, name string) *store.Job {
		j, err := st.JobGetByKey(ctx, group, name)
		if err != nil {
			t.Fatalf("job %s/%s: %v", group, name, err)
		}
		return j
	}
	one, two, three := job("order-exec", "xxl-1"), job("order-exec", "xxl-2"), job("order-exec", "xxl-3")
	if one.App != "order-exec" || one.TargetKind != store.TargetRemote || one.Handler != "orderJob" || one.Params != "p=1" ||
		one.Routing != "first" || one.Concurrency != store.ConcurrencySerial || one.MaxRetries != 2 || one.TimeoutMs != 30000 ||
		!slices.Equal(one.AlarmTargets, []string{"ops@example.com", "dev@example.com"}) ||
		!slices.Equal(one.ChildJobIDs, []int64{two.ID, three.ID}) {
		t.Errorf("xxl-1 stored as %+v", one)
	}
	five := job("order-exec", "xxl-5")
	vs, err := st.ScriptVersionList(ctx, five.ID)
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	for _, v := range vs {
		hist = append(hist, v.Note+"="+v.Script)
	}
	if g := strings.Join(hist, ";"); g != "third=echo v3;second=echo v2;first=echo v1" || five.Params != "echo v3" {
		t.Errorf("xxl-5's script %q, versions (newest first) %s", five.Params, g)
	}

	// A GLUE kind other than shell keeps its versions too (XXL-JOB executors run them all).
	six := job("report-exec", "xxl-6")
	if vs, err := st.ScriptVersionList(ctx, six.ID); err != nil || len(vs) != 1 || six.Handler != "python" || six.Routing != "least_frequently_used" {
		t.Errorf("xxl-6 (GLUE_PYTHON): handler %s routing %s, %d script versions (%v), want python, least_frequently_used, 1",
			six.Handler, six.Routing, len(vs), err)
	}

	ts, err := st.TriggerList(ctx, store.TriggerFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 9 {
		t.Errorf("%d triggers stored, want 9", len(ts))
	}
	for _, tr := range ts {
		paused := tr.Name == "xxl-4#1" || tr.Name == "xxl-5#1"
		if (tr.State == store.TriggerPaused) != paused || (!paused && tr.State != store.TriggerWaiting) {
			t.Errorf("trigger %s: state %s, want paused %v", tr.Name, tr.State, paused)
		}
		next := time.UnixMilli(tr.NextFireAt)
		switch tr.Kind {
		case store.TriggerCron:
			// The first fire is Quartz's computeFirstFireTime from the trigger's start, which
			// searches from one second before it: a start at 08:55:00.400 fires at 08:55:00.
			loc, _ := time.LoadLocation("Asia/Shanghai")
			sched, err := schedule.DecodeSpec(schedule.Kind(tr.Kind), tr.Spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			expr := sched.(*schedule.Cron).String()
			want, err := (&schedule.Trigger{Schedule: sched, Start: time.UnixMilli(tr.StartAt)}).ComputeFirst(nil)
			if err != nil {
				t.Fatalf("trigger %s (%s): %v", tr.Name, expr, err)
			}
			if tr.TimeZone != "Asia/Shanghai" || !next.Equal(want) {
				t.Errorf("trigger %s (%s in %s): next %v, want %v", tr.Name, expr, tr.TimeZone, next, want)
			}
		case store.TriggerSimple:
			if tr.Name == "xxl-3#1" && !next.Equal(filled.Add(xxltest.FixRateAhead).Truncate(time.Millisecond)) {
				t.Errorf("the running FIX_RATE job's trigger: next %v, want its XXL-JOB next %v", next, filled.Add(xxltest.FixRateAhead))
			}
		}
	}
}

// snapshot is what a second import must leave as it was: every job's and trigger's row.
func snapshot(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := context.Background()
	js, err := st.JobList(ctx, store.JobFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := st.TriggerList(ctx, store.TriggerFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	apps, err := st.AppList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, a := range apps {
		fmt.Fprintf(&b, "%+v\n", *a)
	}
	for _, j := range js {
		vs, _ := st.ScriptVersionList(ctx, j.ID)
		fmt.Fprintf(&b, "%+v versions %d\n", *j, len(vs))
	}
	for _, tr := range ts {
		fmt.Fprintf(&b, "%+v\n", *tr)
	}
	return b.String()
}
