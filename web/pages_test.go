package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// The page-render benchmark's list of pages (consolePages) covers every GET page the
// console routes, and each of its pages renders, here on a small database.
func TestConsolePagesCovered(t *testing.T) {
	src, err := os.ReadFile("web.go")
	if err != nil {
		t.Fatal(err)
	}
	// Every GET pattern the console registers, matched as the console's mux matches them.
	mux := http.NewServeMux()
	var patterns []string
	for _, m := range regexp.MustCompile(`\("(GET /[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		p := m[1]
		if p == "GET /static/" || p == "GET /favicon.ico" || p == "GET /tokens" { // assets; the old tokens address redirects
			continue
		}
		patterns = append(patterns, p)
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	if len(patterns) < 15 {
		t.Fatalf("found only %d GET routes in web.go: %v", len(patterns), patterns)
	}

	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	ctx := context.Background()
	sched := h.srv.Scheduler()
	job, err := sched.ScheduleJob(ctx, sundial.Job{Name: "job-0042", Handler: "noop", App: "billing"},
		sundial.Trigger{Schedule: mustCron(t, "0 0 3 * * ?")})
	if err != nil {
		t.Fatal(err)
	}
	script, err := sched.ScheduleJob(ctx, sundial.Job{Name: "rotate", Handler: "shell", App: "ops", Params: "echo one\n"})
	if err != nil {
		t.Fatal(err)
	}
	x := &store.Execution{JobID: job, ScheduledAt: time.Now().UnixMilli(), Cause: store.CauseManual, State: store.ExecSucceeded}
	if _, err := h.st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AppPut(ctx, &store.App{Name: "billing", AddressMode: store.AddressAuto}); err != nil {
		t.Fatal(err)
	}
	wf, wfRun, err := seedWorkflow(ctx, h.st, job)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := h.st.UserGetByName(ctx, adminName)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, p := range consolePages(pageIDs{job: job, execution: x.ID, scriptJob: script, user: admin.ID, jobsPage100: job, workflow: wf, workflowRun: wfRun}, time.Now().UTC()) {
		c.get(p.path).mustStatus(t, http.StatusOK)
		_, pattern := mux.Handler(httptest.NewRequest(http.MethodGet, p.path, nil))
		covered[pattern] = true
	}
	for _, p := range patterns {
		if !covered[p] && p != "GET /" {
			t.Errorf("the page benchmark has no page of the route %q", p)
		}
	}
}
