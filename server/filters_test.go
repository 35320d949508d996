package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestListFilters checks the job and execution lists' filters through api.Client on every
// dialect: each filter alone keeps exactly its rows, filters combine, and a filtered list
// pages with limit and the next cursor without losing or repeating a row.
func TestListFilters(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		c, ctx := e.client(), context.Background()
		job := func(body map[string]any) api.Job {
			var j api.Job
			e.call("POST", "/api/v1/jobs", body, http.StatusCreated, &j)
			return j
		}
		hourly := []any{map[string]any{"cron": "0 0 * * * ?"}}
		daily := job(map[string]any{"group": "nightly", "name": "Report-daily", "handler": "noop", "triggers": hourly})
		weekly := job(map[string]any{"group": "nightly", "name": "report-weekly", "handler": "report", "app": "billing", "triggers": hourly})
		cleanup := job(map[string]any{"name": "cleanup", "handler": "noop", "triggers": hourly})
		sync := job(map[string]any{"name": "sync", "handler": "report", "app": "billing"})
		must(c.PauseJob(ctx, cleanup.ID))(t)

		// sync's newest ended run failed; daily's failure was followed by a success.
		at := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
		ended := func(j api.Job, at int64, st store.ExecutionState, cause store.ExecutionCause, addr string) *store.Execution {
			return &store.Execution{JobID: j.ID, ScheduledAt: at, FiredAt: at, FinishedAt: at + 5, Cause: cause, State: st, ExecutorAddress: addr}
		}
		xs := []*store.Execution{
			ended(daily, at, store.ExecFailed, store.CauseSchedule, ""),
			ended(sync, at+1, store.ExecSucceeded, store.CauseManual, "http://127.0.0.1:9001"),
			ended(daily, at+2, store.ExecSucceeded, store.CauseRetry, ""),
			ended(sync, at+3, store.ExecFailed, store.CauseSchedule, "http://127.0.0.1:9002"),
			ended(weekly, at+4, store.ExecSucceeded, store.CauseSchedule, "http://127.0.0.1:9001"),
		}
		if _, err := e.st.ExecutionsInsert(ctx, xs); err != nil {
			t.Fatal(err)
		}

		jobIDs := func(f api.JobFilter) string {
			t.Helper()
			var got []int64
			o := api.ListOptions{Limit: 1}
			for range 10 {
				pg := must(c.ListJobs(ctx, f, o))(t)
				for _, j := range pg.Items {
					got = append(got, j.ID)
				}
				if pg.Next == nil {
					return fmt.Sprint(got)
				}
				o.After = *pg.Next
			}
			t.Fatalf("ListJobs(%+v): more than 10 pages", f)
			return ""
		}
		for _, tc := range []struct {
			f    api.JobFilter
			want []int64
		}{
			{api.JobFilter{Group: "nightly"}, []int64{daily.ID, weekly.ID}},
			{api.JobFilter{App: "billing"}, []int64{weekly.ID, sync.ID}},
			{api.JobFilter{Handler: "noop"}, []int64{daily.ID, cleanup.ID}},
			{api.JobFilter{NamePrefix: "report-"}, []int64{daily.ID, weekly.ID}},
			{api.JobFilter{NamePrefix: "report-d", Group: "nightly"}, []int64{daily.ID}},
			{api.JobFilter{State: "paused"}, []int64{cleanup.ID}},
			{api.JobFilter{State: "enabled"}, []int64{daily.ID, weekly.ID}},
			{api.JobFilter{State: "failing"}, []int64{sync.ID}},
			{api.JobFilter{State: "failing", App: "billing", Handler: "noop"}, nil},
		} {
			if got := jobIDs(tc.f); got != fmt.Sprint(tc.want) {
				t.Errorf("ListJobs(%+v) = %s, want %v", tc.f, got, tc.want)
			}
		}
		// A listed job says whether it is paused, as one job read alone does.
		for _, j := range must(c.ListJobs(ctx, api.JobFilter{}, api.ListOptions{}))(t).Items {
			if j.Paused != (j.ID == cleanup.ID) || j.Paused != must(c.GetJob(ctx, j.ID))(t).Paused {
				t.Errorf("job %d %q: listed paused %v", j.ID, j.Name, j.Paused)
			}
		}
		if found := must(c.FindJob(ctx, "", "cleanup"))(t); !found.Paused {
			t.Errorf("cleanup found by name: paused %v, want true", found.Paused)
		}
		if ae := e.callErr("GET", "/api/v1/jobs?state=sleeping", nil, http.StatusBadRequest); ae.Field != "state" {
			t.Errorf("state=sleeping: field %q, want state", ae.Field)
		}

		execIDs := func(f api.ExecutionFilter) string {
			t.Helper()
			var got []int64
			o := api.ListOptions{Limit: 1}
			for range 10 {
				pg := must(c.ListExecutions(ctx, f, o))(t)
				for _, x := range pg.Items {
					got = append(got, x.ID)
				}
				if pg.Next == nil {
					return fmt.Sprint(got)
				}
				o.After = *pg.Next
			}
			t.Fatalf("ListExecutions(%+v): more than 10 pages", f)
			return ""
		}
		rfc := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
		for _, tc := range []struct {
			f    api.ExecutionFilter
			want []int64
		}{
			{api.ExecutionFilter{JobID: daily.ID, Order: "asc"}, []int64{xs[0].ID, xs[2].ID}},
			{api.ExecutionFilter{App: "billing", Order: "asc"}, []int64{xs[1].ID, xs[3].ID, xs[4].ID}},
			{api.ExecutionFilter{State: "failed", Order: "asc"}, []int64{xs[0].ID, xs[3].ID}},
			{api.ExecutionFilter{Cause: "retry"}, []int64{xs[2].ID}},
			{api.ExecutionFilter{Executor: "http://127.0.0.1:9001"}, []int64{xs[4].ID, xs[1].ID}},
			{api.ExecutionFilter{From: rfc(at + 1), To: rfc(at + 4), Order: "asc"}, []int64{xs[1].ID, xs[2].ID, xs[3].ID}},
			{api.ExecutionFilter{App: "billing", State: "failed", Cause: "schedule", Executor: "http://127.0.0.1:9002"}, []int64{xs[3].ID}},
			{api.ExecutionFilter{App: "billing", Cause: "retry"}, nil},
		} {
			if got := execIDs(tc.f); got != fmt.Sprint(tc.want) {
				t.Errorf("ListExecutions(%+v) = %s, want %v", tc.f, got, tc.want)
			}
		}
		if ae := e.callErr("GET", "/api/v1/executions?cause=boredom", nil, http.StatusBadRequest); ae.Field != "cause" {
			t.Errorf("cause=boredom: field %q, want cause", ae.Field)
		}
	})
}

// TestExecutorList: the executor list shows each live instance with the version it
// registered with and the runs it has now, of one app or all, a page at a time.
func TestExecutorList(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Minute) // no instance goes silent during the test
		c, ctx := e.client(), context.Background()
		a, b, other := newFakeExecutor(t), newFakeExecutor(t), newFakeExecutor(t)
		for _, r := range []struct {
			app     string
			fe      *fakeExecutor
			version string
		}{{"billing", a, "v1.4.0"}, {"billing", b, ""}, {"other", other, "v2.0.0"}} {
			e.executorAs(sender{r.app, inst("i-" + r.app)}, "register", map[string]any{"app": r.app, "address": r.fe.url, "instance": inst("i-" + r.app),
				"version": r.version, "handlers": []string{"report"}}, http.StatusOK, nil)
		}
		job := e.remoteJob("billing", "round_robin", nil)
		now := time.Now().UnixMilli()
		running := func(at int64, addr string) *store.Execution {
			return &store.Execution{JobID: job, ScheduledAt: at, FiredAt: at, Cause: store.CauseManual, State: store.ExecRunning,
				Node: "gone", ExecutorAddress: addr, ExecutorApp: "billing", TriggerCode: store.DispatchAccepted}
		}
		if _, err := e.st.ExecutionsInsert(ctx, []*store.Execution{running(now, a.url), running(now+1, a.url), running(now+2, b.url)}); err != nil {
			t.Fatal(err)
		}
		all := must(c.ListExecutors(ctx, "", api.ListOptions{}))(t).Items
		got := map[string]string{}
		for _, x := range all {
			got[x.Address] = fmt.Sprintf("%s %s %d %s", x.App, x.Version, x.Running, x.Instance)
			if x.LastSeen.IsZero() {
				t.Errorf("executor %s: no last heartbeat", x.Address)
			}
		}
		want := map[string]string{a.url: "billing v1.4.0 2 " + inst("i-billing"), b.url: "billing  1 " + inst("i-billing"), other.url: "other v2.0.0 0 " + inst("i-other")}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("executors: %v, want %v", got, want)
		}
		// One app's, a page of one at a time.
		var pages []string
		o := api.ListOptions{Limit: 1}
		for range 5 {
			pg := must(c.ListExecutors(ctx, "billing", o))(t)
			for _, x := range pg.Items {
				pages = append(pages, x.Address)
			}
			if pg.Next == nil {
				break
			}
			o.After = *pg.Next
		}
		if len(pages) != 2 || pages[0] == pages[1] || !slices.Contains(pages, a.url) || !slices.Contains(pages, b.url) {
			t.Errorf("billing's executors by pages of one: %v, want %s and %s once each", pages, a.url, b.url)
		}
		// Apps (stored, or made by an executor's registration) page by name the same way.
		must(c.PutApp(ctx, "zeta", api.AppRequest{Title: "Zeta"}))(t)
		var apps []string
		o = api.ListOptions{Limit: 1}
		for range 5 {
			pg := must(c.ListApps(ctx, o))(t)
			for _, a := range pg.Items {
				apps = append(apps, a.Name)
			}
			if pg.Next == nil {
				break
			}
			o.After = *pg.Next
		}
		if fmt.Sprint(apps) != "[billing other zeta]" {
			t.Errorf("apps by pages of one: %v, want [billing other zeta]", apps)
		}
		if nodes := must(c.ListNodes(ctx, api.ListOptions{Limit: 1}))(t); len(nodes.Items) != 1 || nodes.Next != nil {
			t.Errorf("nodes of a one-node cluster, a page of one: %+v", nodes)
		}
		var eb api.ErrorBody
		e.executor("register", map[string]any{"app": "billing", "address": a.url, "version": strings.Repeat("v", 101)},
			http.StatusBadRequest, &eb)
		if eb.Error.Field != "version" {
			t.Errorf("a 101-character version: %+v, want refused on version", eb.Error)
		}
	})
}
