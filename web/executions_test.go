package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// The executions page, filtered by each of job, app, state, time range and cause and by all
// at once, lists exactly the matching executions newest first across its pages: each "Older"
// link keeps the filters and continues below the last row shown.
func TestExecutionsFiltersPage(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	ctx := context.Background()
	var jobs []*store.Job
	for i, app := range []string{"billing", "reports", "billing"} {
		if err := h.st.AppPut(ctx, &store.App{Name: app, AddressMode: "auto"}); err != nil {
			t.Fatal(err)
		}
		j := &store.Job{Group: "g", Name: fmt.Sprint("job", i), TargetKind: store.TargetRemote, Handler: "h", App: app, Enabled: true}
		if err := h.st.JobInsert(ctx, j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	states := []store.ExecutionState{store.ExecSucceeded, store.ExecFailed, store.ExecSucceeded, store.ExecTimedOut, store.ExecRunning}
	causes := []store.ExecutionCause{store.CauseSchedule, store.CauseManual, store.CauseRetry}
	var xs []*store.Execution
	for i := range 260 {
		at := base.Add(time.Duration(i) * time.Hour).UnixMilli()
		xs = append(xs, &store.Execution{JobID: jobs[i%3].ID, TriggerID: 0, ScheduledAt: at, FiredAt: at, StartedAt: at,
			FinishedAt: at + 10, Cause: causes[i%len(causes)], State: states[i%len(states)], Node: "n1"})
	}
	if _, err := h.st.ExecutionsInsert(ctx, xs); err != nil {
		t.Fatal(err)
	}
	appOf := map[int64]string{}
	for _, j := range jobs {
		appOf[j.ID] = j.App
	}
	from, to := base.Add(20*time.Hour), base.Add(200*time.Hour)
	type filter struct {
		query url.Values
		keep  func(x *store.Execution) bool
	}
	inRange := func(x *store.Execution) bool { return x.FiredAt >= from.UnixMilli() && x.FiredAt < to.UnixMilli() }
	rangeQ := url.Values{"from": {from.Format("2006-01-02T15:04")}, "to": {to.Format("2006-01-02T15:04")}}
	for _, f := range []filter{
		{url.Values{}, func(*store.Execution) bool { return true }},
		{url.Values{"job": {strconv.FormatInt(jobs[1].ID, 10)}}, func(x *store.Execution) bool { return x.JobID == jobs[1].ID }},
		{url.Values{"app": {"billing"}}, func(x *store.Execution) bool { return appOf[x.JobID] == "billing" }},
		{url.Values{"state": {"failed"}}, func(x *store.Execution) bool { return x.State == store.ExecFailed }},
		{url.Values{"state": {"running"}}, func(x *store.Execution) bool { return x.State == store.ExecRunning }},
		{url.Values{"cause": {"manual"}}, func(x *store.Execution) bool { return x.Cause == store.CauseManual }},
		{rangeQ, inRange},
		{url.Values{"app": {"billing"}, "state": {"succeeded"}, "cause": {"retry"}, "from": rangeQ["from"], "to": rangeQ["to"]},
			func(x *store.Execution) bool {
				return appOf[x.JobID] == "billing" && x.State == store.ExecSucceeded && x.Cause == store.CauseRetry && inRange(x)
			}},
	} {
		var want []int64
		for _, x := range xs {
			if f.keep(x) {
				want = append(want, x.ID)
			}
		}
		slices.Reverse(want)
		got, pages := walkExecutionPages(t, c, "/executions?"+f.query.Encode())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("executions?%s over %d pages: got %d rows %v\nwant %d %v", f.query.Encode(), pages, len(got), got, len(want), want)
		}
	}
	c.get("/executions?app=billing").mustContain(t, `<option selected>billing</option>`)
	c.get("/executions?"+rangeQ.Encode()).mustContain(t, `id="by-fired"`)
	if strings.Contains(c.get("/executions").body, `id="by-fired"`) {
		t.Error("the list without a time range says it is by fired time")
	}
}

var (
	execRowRE  = regexp.MustCompile(`<td><a href="/executions/(\d+)">`)
	olderRE    = regexp.MustCompile(`<a href="/executions\?([^"]+)" rel="next">`)
	htmlAmpRE  = regexp.MustCompile(`&amp;`)
	maxPagesOK = 20
)

// walkExecutionPages follows the "Older" links from path and returns the execution ids of
// all the pages in order, and how many pages there were.
func walkExecutionPages(t *testing.T, c *client, path string) ([]int64, int) {
	t.Helper()
	var ids []int64
	for pages := 1; ; pages++ {
		if pages > maxPagesOK {
			t.Fatalf("%s: more than %d pages", path, maxPagesOK)
		}
		p := c.get(path).mustStatus(t, http.StatusOK)
		for _, m := range execRowRE.FindAllStringSubmatch(p.body, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			ids = append(ids, id)
		}
		m := olderRE.FindStringSubmatch(p.body)
		if m == nil {
			return ids, pages
		}
		path = "/executions?" + htmlAmpRE.ReplaceAllString(m[1], "&")
	}
}

// The jobs list pages by id with its filters kept, and shows each job's state and next fire
// from its triggers (read for the whole page at once).
func TestJobsPages(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	ctx := context.Background()
	sched := h.srv.Scheduler()
	for i := range 55 {
		var trig []sundial.Trigger
		if i%5 != 4 {
			trig = append(trig, sundial.Trigger{Schedule: mustCron(t, "0 0 3 * * ?")})
		}
		if _, err := sched.ScheduleJob(ctx, sundial.Job{Name: fmt.Sprintf("job-%02d", i), Handler: "noop"}, trig...); err != nil {
			t.Fatal(err)
		}
	}
	first := c.get("/jobs?q=job").mustStatus(t, http.StatusOK)
	rows := jobRowRE.FindAllStringSubmatch(first.body, -1)
	m := regexp.MustCompile(`<a href="(/jobs\?[^"]+)" rel="next">`).FindStringSubmatch(first.body)
	if len(rows) != 50 || m == nil {
		t.Fatalf("first page: %d rows, next link %v", len(rows), m)
	}
	second := c.get(htmlAmpRE.ReplaceAllString(m[1], "&")).mustStatus(t, http.StatusOK)
	more := jobRowRE.FindAllStringSubmatch(second.body, -1)
	if len(more) != 5 || more[4][1] != "job-54" || strings.Contains(second.body, `rel="next"`) {
		t.Fatalf("second page: %d rows %v", len(more), more)
	}
	// job-49 has no trigger; job-48 fires at 03:00.
	if !strings.Contains(first.body, `<a href="/jobs/49">job-48</a>`) {
		t.Fatal("job-48 is not on the first page")
	}
	for _, r := range rows {
		if r[1] == "job-48" && !strings.Contains(r[0], "active") {
			t.Errorf("job-48's row: %s", r[0])
		}
	}
}

var jobRowRE = regexp.MustCompile(`(?s)<td><a href="/jobs/\d+">([^<]+)</a>.*?</tr>`)
