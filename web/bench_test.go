package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/web"
)

// BenchmarkPages times each console page's handler (in-process, no network) on a database
// holding 10,000 jobs (each with a cron trigger) and 1,000,000 executions over 30 days.
// SUNDIAL_BENCH_JOBS and SUNDIAL_BENCH_EXECUTIONS change the volume; seeding takes minutes.
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 20x ./web/
func BenchmarkPages(b *testing.B) {
	jobs, execs := envInt(b, "SUNDIAL_BENCH_JOBS", 10_000), envInt(b, "SUNDIAL_BENCH_EXECUTIONS", 1_000_000)
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlstore.Open(ctx, testdb.DSN(b, dialect))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			if err := web.Mount(srv, web.Config{Logger: slog.New(slog.DiscardHandler)}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			ids := seedVolume(b, srv, st, jobs, execs)
			b.Logf("%s: seeded %d jobs and %d executions in %v", dialect, jobs, execs, time.Since(start).Round(time.Second))
			// A database that has held its history for weeks has statistics, and autovacuum has
			// cleared the live table of the rows a minute's load leaves dead there.
			// SUNDIAL_BENCH_RAW=1 measures the pages right after the load instead.
			if os.Getenv("SUNDIAL_BENCH_RAW") == "" {
				if err := st.Analyze(ctx); err != nil {
					b.Fatal(err)
				}
			}
			h := srv.Handler()
			cookie := benchLogin(b, h, st)
			admin, err := st.UserGetByName(ctx, adminName)
			if err != nil {
				b.Fatal(err)
			}
			ids.user = admin.ID
			for _, p := range consolePages(ids, time.Now().UTC()) {
				b.Run(p.name, func(b *testing.B) {
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, p.path, nil)
						req.AddCookie(cookie)
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body.String())
						}
					}
				})
			}
		})
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// pageIDs name what the console's pages show: a job, one of its executions, a script job with
// versions, a user, and the page where the job list's hundredth page starts.
type pageIDs struct {
	job, execution, scriptJob, user, jobsPage100 int64
	workflow                                     string
	workflowRun                                  int64
}

// seedWorkflow stores a workflow of one node running job and a run of it, for the workflow
// pages.
func seedWorkflow(ctx context.Context, st store.Store, job int64) (string, int64, error) {
	w := &store.Workflow{Name: "nightly", Graph: fmt.Sprintf(`{"nodes":[{"name":"load","job_id":%d}]}`, job)}
	if err := st.WorkflowInsert(ctx, w); err != nil {
		return "", 0, err
	}
	r := &store.WorkflowRun{WorkflowID: w.ID, State: "succeeded", Graph: w.Graph, Cause: store.CauseManual,
		CreatedAt: time.Now().UnixMilli(), FinishedAt: time.Now().UnixMilli(), Version: w.Version}
	if err := st.WorkflowRunInsert(ctx, r); err != nil {
		return "", 0, err
	}
	return w.Name, r.ID, nil
}

// consolePages are the console's pages, each signed-in GET page once and the API call its
// chart makes; TestConsolePagesCovered checks that the list covers every page route.
func consolePages(ids pageIDs, now time.Time) []struct{ name, path string } {
	preview := url.Values{"prefix": {""}, "kind": {"cron"}, "cron": {"0 15 10 ? * MON-FRI"}, "time_zone": {"Europe/Berlin"}}
	return []struct{ name, path string }{
		{"dashboard", "/"},
		{"dashboard-chart-30d", "/api/v1/reports/daily?from=" + now.AddDate(0, 0, -29).Format("2006-01-02") + "&to=" + now.Format("2006-01-02")},
		{"jobs", "/jobs"},
		{"jobs-search", "/jobs?q=job-0042"},
		{"jobs-paused", "/jobs?state=paused"},
		{"jobs-of-app", "/jobs?app=billing"},
		{"jobs-page-100", fmt.Sprintf("/jobs?after=%d", ids.jobsPage100)},
		{"job", fmt.Sprintf("/jobs/%d", ids.job)},
		{"job-fires", fmt.Sprintf("/jobs/%d/fires", ids.job)},
		{"job-edit", fmt.Sprintf("/jobs/%d/edit", ids.job)},
		{"job-copy", fmt.Sprintf("/jobs/%d/copy", ids.job)},
		{"job-new", "/jobs/new"},
		{"script-job", fmt.Sprintf("/jobs/%d", ids.scriptJob)},
		{"script-version", fmt.Sprintf("/jobs/%d/script/versions/1", ids.scriptJob)},
		{"preview", "/preview?" + preview.Encode()},
		{"executions", "/executions"},
		{"executions-failed", "/executions?state=failed"},
		{"executions-of-job", fmt.Sprintf("/executions?job=%d", ids.job)},
		{"executions-of-app", "/executions?app=billing"},
		{"executions-manual-range", "/executions?cause=manual&from=" + now.AddDate(0, 0, -2).Format("2006-01-02T15:04") +
			"&to=" + now.AddDate(0, 0, -1).Format("2006-01-02T15:04")},
		{"executions-old-range", "/executions?from=" + now.AddDate(0, 0, -26).Format("2006-01-02T15:04") +
			"&to=" + now.AddDate(0, 0, -25).Format("2006-01-02T15:04")},
		{"executions-recovery", "/executions?cause=recovery"},
		{"executions-recovery-range", "/executions?cause=recovery&from=" + now.AddDate(0, 0, -26).Format("2006-01-02T15:04")},
		{"execution", fmt.Sprintf("/executions/%d", ids.execution)},
		{"apps", "/apps"},
		{"app", "/apps/billing"},
		{"nodes", "/nodes"},
		{"calendars", "/calendars"},
		{"users", "/users"},
		{"user", fmt.Sprintf("/users/%d", ids.user)},
		{"account", "/account"},
		{"login", "/login"},
		{"reset", "/reset"},
		{"workflows", "/workflows"},
		{"workflow-new", "/workflows/new"},
		{"workflow-edit", "/workflows/" + ids.workflow + "/edit"},
		{"workflow-jobs", "/workflow-jobs?job_q=job-00"},
		{"workflow", "/workflows/" + ids.workflow},
		{"workflow-run", fmt.Sprintf("/workflow-runs/%d", ids.workflowRun)},
	}
}

// seedVolume stores the jobs (a tenth of them paused, a tenth in app billing), a script job
// with two versions and the executions, spread over the jobs and the last 30 days, 5%
// failed.
func seedVolume(b *testing.B, srv *server.Server, st store.Store, jobs, execs int) pageIDs {
	ctx := context.Background()
	sched := srv.Scheduler()
	// The app a tenth of the jobs run in, with its page.
	if err := st.AppPut(ctx, &store.App{Name: "billing", Title: "Billing", AddressMode: store.AddressAuto}); err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, 0, jobs)
	var lastExec int64
	for from := 0; from < jobs; from += 1000 {
		tx, err := st.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := from; i < min(from+1000, jobs); i++ {
			c, err := sundial.Cron(fmt.Sprintf("0 %d %d * * ?", i%60, i%24), "UTC")
			if err != nil {
				b.Fatal(err)
			}
			app := ""
			if i%10 == 5 {
				app = "billing"
			}
			id, err := sched.ScheduleJobTx(ctx, tx, sundial.Job{Group: fmt.Sprintf("team-%d", i%20),
				Name: fmt.Sprintf("job-%04d", i), Handler: "noop", App: app}, sundial.Trigger{Schedule: c})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < len(ids); i += 10 {
		if _, err := st.TriggersPause(ctx, store.TriggerSelector{JobID: ids[i]}); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	span := int64(30 * 24 * time.Hour / time.Millisecond)
	const batch = 1000
	rows := make([]*store.Execution, 0, batch)
	days := map[string]bool{}
	for i := 0; i < execs; i++ {
		at := now - span + span*int64(i)/int64(execs)
		state := store.ExecSucceeded
		if i%20 == 7 {
			state = store.ExecFailed
		}
		// Most runs come from schedules; 5% are retries, 2% manual, 0.1% recoveries.
		cause := store.CauseSchedule
		switch {
		case i%20 == 8:
			cause = store.CauseRetry
		case i%50 == 3:
			cause = store.CauseManual
		case i%1000 == 11:
			cause = store.CauseRecovery
		}
		rows = append(rows, &store.Execution{JobID: ids[i%len(ids)], ScheduledAt: at, FiredAt: at, StartedAt: at,
			FinishedAt: at + int64(i%900), Cause: cause, State: state, AlarmState: store.AlarmNone})
		days[time.UnixMilli(at).UTC().Format("2006-01-02")] = true
		if len(rows) == batch || i == execs-1 {
			if _, err := st.ExecutionsInsert(ctx, rows); err != nil {
				b.Fatal(err)
			}
			for _, x := range rows {
				if x.JobID == ids[len(ids)-1] {
					lastExec = x.ID
				}
			}
			rows = rows[:0]
		}
	}
	for d := range days {
		if _, err := st.ReportsRefresh(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	script, err := sched.ScheduleJob(ctx, sundial.Job{Name: "rotate-logs", Handler: "shell", App: "ops", Params: "echo one\n",
		ScriptNote: "first"})
	if err != nil {
		b.Fatal(err)
	}
	if err := sched.UpdateJob(ctx, script, sundial.Job{Name: "rotate-logs", Handler: "shell", App: "ops",
		Params: "echo two\n", ScriptNote: "second"}); err != nil {
		b.Fatal(err)
	}
	wf, wfRun, err := seedWorkflow(ctx, st, ids[0])
	if err != nil {
		b.Fatal(err)
	}
	return pageIDs{job: ids[len(ids)-1], execution: lastExec, scriptJob: script, jobsPage100: ids[len(ids)/2],
		workflow: wf, workflowRun: wfRun}
}

// benchLogin signs in through the console's form and returns the session cookie.
func benchLogin(b *testing.B, h http.Handler, st store.Store) *http.Cookie {
	hash, err := bcrypt.GenerateFromPassword([]byte(adminPass), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.UserInsert(context.Background(), &store.User{Name: adminName, PasswordHash: string(hash), Role: store.RoleAdmin}); err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
	body, _ := io.ReadAll(rec.Body)
	m := csrfRE.FindStringSubmatch(string(body))
	if m == nil {
		b.Fatal("no CSRF token on the login page")
	}
	form := url.Values{"username": {adminName}, "password": {adminPass}, "csrf": {m[1]}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "sundial_session" {
			return c
		}
	}
	b.Fatalf("login: %d %s", rec.Code, rec.Body.String())
	return nil
}
