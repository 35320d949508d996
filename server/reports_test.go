package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestDailyReport: the leader's report rows, served by GET /api/v1/reports/daily, count the
// executions by outcome, per day and per job.
func TestDailyReport(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvOn(t, openStore(t, dialect), func(c *Config) {
			c.ExecutorHeartbeat = 20 * time.Millisecond // the leader duties' tick
			c.ReportInterval = time.Millisecond
		}, registerBoom)
		c, ctx := e.client(), context.Background()
		ok := must(c.CreateJob(ctx, api.JobRequest{Name: "ok", Handler: "noop"}))(t)
		bad := must(c.CreateJob(ctx, api.JobRequest{Name: "bad", Handler: "boom", MaxRetries: 1, RetryBackoffMs: 1}))(t)
		for range 3 {
			must(c.RunJob(ctx, ok.ID))(t)
		}
		for range 2 {
			must(c.RunJob(ctx, bad.ID))(t)
		}
		okRuns, badRuns := e.settled(ok.ID, 3), e.settled(bad.ID, 4) // each bad run is retried once

		// What the rows must say, from the executions themselves.
		want := map[int64]map[string]*api.ReportRow{}
		first, last := "9999-12-31", "0000-01-01"
		for _, x := range append(okRuns, badRuns...) {
			day := time.UnixMilli(x.FiredAt).UTC().Format(dayLayout)
			first, last = min(first, day), max(last, day)
			for _, job := range []int64{0, x.JobID} {
				if want[job] == nil {
					want[job] = map[string]*api.ReportRow{}
				}
				r := want[job][day]
				if r == nil {
					r = &api.ReportRow{Day: day}
					want[job][day] = r
				}
				switch x.State {
				case store.ExecSucceeded:
					r.Succeeded++
				case store.ExecFailed:
					r.Failed++
				default:
					t.Fatalf("execution %d is %s", x.ID, x.State)
				}
				r.Total++
			}
		}
		for _, job := range []int64{0, ok.ID, bad.ID} {
			// A refresh that read the executions before they all finished may be the latest
			// for a moment: wait for one that counts them as they are now.
			mismatch := func() string {
				got := must(c.DailyReport(ctx, api.ReportFilter{From: first, To: last, JobID: job}))(t)
				for _, r := range got.Items {
					w := want[job][r.Day]
					if w == nil {
						w = &api.ReportRow{Day: r.Day}
					}
					if r != *w {
						return fmt.Sprintf("job %d, %s: %+v, want %+v", job, r.Day, r, *w)
					}
				}
				return ""
			}
			deadline := time.Now().Add(20 * time.Second)
			for m := mismatch(); m != ""; m = mismatch() {
				if time.Now().After(deadline) {
					t.Fatalf("report rows never matched the executions: %s", m)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}

		// Every day of the range has an item; bad ranges are refused naming the query
		// parameter (checked as raw requests: the parameter names are the wire format).
		week := must(c.DailyReport(ctx, api.ReportFilter{From: "2020-02-27", To: "2020-03-04"}))(t)
		if len(week.Items) != 7 || week.Items[0].Day != "2020-02-27" || week.Items[2].Day != "2020-02-29" || week.Totals.Total != 0 {
			t.Errorf("an empty week: %+v", week)
		}
		for q, field := range map[string]string{"from=2024-13-01": "from", "from=2024-03-02&to=2024-03-01": "from",
			"from=2020-01-01&to=2024-01-01": "to", "job_id=x": "job_id"} {
			if err := e.callErr("GET", "/api/v1/reports/daily?"+q, nil, 400); err.Field != field {
				t.Errorf("?%s: field %q, want %q", q, err.Field, field)
			}
		}
	})
}

// TestDailyReportScope: a viewer of alpha reads the report of alpha's jobs and jobs of no
// app only: totals leave beta's out, and beta's job by job_id is 403.
func TestDailyReportScope(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		c, ctx := e.client(), context.Background()
		alpha := must(c.CreateJob(ctx, jobReq("a", "alpha", "http")))(t)
		beta := must(c.CreateJob(ctx, jobReq("b", "beta", "http")))(t)
		now := time.Now().UTC()
		day := now.Format(dayLayout)
		var xs []*store.Execution
		for job, states := range map[int64][]store.ExecutionState{alpha.ID: {store.ExecSucceeded},
			beta.ID: {store.ExecFailed, store.ExecFailed, store.ExecSucceeded}} {
			for _, st := range states {
				xs = append(xs, &store.Execution{JobID: job, ScheduledAt: now.UnixMilli(), FiredAt: now.UnixMilli(), Cause: store.CauseAPI, State: st})
			}
		}
		must(e.st.ExecutionsInsert(ctx, xs))(t)
		must(e.st.ReportsRefresh(ctx, day))(t)
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer, Scope: []string{"alpha"}})
		f := api.ReportFilter{From: day, To: day}
		if got := must(c.DailyReport(ctx, f))(t).Totals; got.Succeeded != 2 || got.Failed != 2 {
			t.Fatalf("the admin's totals %+v, want 2 succeeded and 2 failed", got)
		}
		if got := must(viewer.DailyReport(ctx, f))(t); got.Totals.Succeeded != 1 || got.Totals.Failed != 0 || got.Totals.Total != 1 ||
			len(got.Items) != 1 || got.Items[0].Total != 1 {
			t.Fatalf("alpha's viewer reads %+v, want alpha's one success only", got)
		}
		f.JobID = beta.ID
		_, err := viewer.DailyReport(ctx, f)
		wantStatus(t, "alpha's viewer reading beta's job report", err, 403)
		f.JobID = alpha.ID
		if got := must(viewer.DailyReport(ctx, f))(t).Totals; got.Total != 1 {
			t.Fatalf("alpha's viewer reads alpha's job report %+v, want 1 run", got)
		}
	})
}
