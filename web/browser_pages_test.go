package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// Every page of the console (consolePages, the page benchmark's list), on a phone-width
// screen in light mode and on a wide one in dark mode: no error in the browser's console
// (newBrowser fails the test on one), no error page, nothing wider than a 375 px screen,
// every input labelled. The screenshots are for a person to look at.
func TestBrowserEveryPage(t *testing.T) {
	h := browserHarness(t)
	job := seedHistory(t, h)
	ctx := context.Background()
	sched := h.srv.Scheduler()
	script, err := sched.ScheduleJob(ctx, sundial.Job{Name: "rotate-logs", Handler: "shell", App: "ops",
		Params: "#!/bin/sh\nfind /var/log -name '*.gz' -mtime +30 -delete\n", ScriptNote: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.UpdateJob(ctx, script, sundial.Job{Name: "rotate-logs", Handler: "shell", App: "ops",
		Params: "#!/bin/sh\nfind /var/log -name '*.gz' -mtime +14 -delete\n", ScriptNote: "keep two weeks"}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AppPut(ctx, &store.App{Name: "billing", Title: "Billing", AddressMode: "auto"}); err != nil {
		t.Fatal(err)
	}
	if err := sched.PutCalendar(ctx, sundial.Calendar{Name: "holidays", Spec: "holiday:2026-12-25"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	x := &store.Execution{JobID: job, ScheduledAt: now.UnixMilli(), FiredAt: now.UnixMilli(), StartedAt: now.UnixMilli(),
		FinishedAt: now.UnixMilli() + 1500, Cause: store.CauseManual, State: store.ExecFailed, HandleCode: 500,
		HandleMsg: "report builder: upstream timed out after 30s", Params: "--month=11"}
	if _, err := h.st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.ExecutionLogAppend(ctx, x.ID, []store.LogLine{{Line: 1, At: now.UnixMilli(), Message: "building the report"},
		{Line: 2, At: now.UnixMilli(), Message: "error: upstream timed out after 30s"}}); err != nil {
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
	pages := consolePages(pageIDs{job: job, execution: x.ID, scriptJob: script, user: admin.ID, jobsPage100: job, workflow: wf, workflowRun: wfRun}, now.UTC())

	for _, mode := range []struct {
		name  string
		width int
		dark  bool
	}{{"narrow", 375, false}, {"dark", 1280, true}} {
		t.Run(mode.name, func(t *testing.T) {
			b := newBrowser(t, h, mode.width, 800)
			if mode.dark {
				b.preferDark()
			}
			b.login()
			for _, p := range pages {
				if strings.HasPrefix(p.path, "/api/") || strings.HasPrefix(p.path, "/preview") || strings.HasSuffix(p.path, "/fires") ||
					strings.HasPrefix(p.path, "/workflow-jobs") {
					continue // the chart's data, drawn on the dashboard; the editor's preview, the job list's fire times and the workflow editor's job picker (fragments)
				}
				b.do("open "+p.path, chromedp.Navigate(h.url+p.path), chromedp.WaitVisible(chromedp.ID("main")))
				title, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.title`))
				if err != nil {
					t.Fatal(err)
				}
				for _, bad := range []string{"Not Found", "Bad Request", "Forbidden", "Internal Server Error"} {
					if strings.HasPrefix(title, bad) {
						t.Errorf("%s: an error page (%q)", p.path, title)
					}
				}
				w, err := chromedp.Run(b.ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
				if err != nil {
					t.Fatal(err)
				}
				if w > mode.width {
					t.Errorf("%s is %d px wide on a %d px screen", p.path, w, mode.width)
				}
				unlabelled, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("input:not([type=hidden]), select, textarea")]
					.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby")).map(e => e.name || e.id)`))
				if err != nil {
					t.Fatal(err)
				}
				if len(unlabelled) > 0 {
					t.Errorf("%s: inputs without a label: %v", p.path, unlabelled)
				}
				b.screenshot(fmt.Sprintf("page-%s-%s", mode.name, p.name))
			}
		})
	}
}
