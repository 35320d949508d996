package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// shotModes are the four ways a changed page is looked at: light and dark, desktop and phone.
var shotModes = []struct {
	name          string
	width, height int
	dark          bool
}{{"desktop-light", 1280, 900, false}, {"desktop-dark", 1280, 900, true}, {"phone-light", 375, 800, false}, {"phone-dark", 375, 800, true}}

// shot saves a screenshot, and a copy under $SUNDIAL_SHOTS when set (for a person to look at
// outside the repository).
func (b *browser) shot(name string) {
	b.t.Helper()
	path := b.screenshot(name)
	if dir := os.Getenv("SUNDIAL_SHOTS"); dir != "" {
		png, err := os.ReadFile(path)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
		if err != nil {
			b.t.Fatal(err)
		}
	}
}

// pickZone chooses the zone times are shown in, as a person does with the header's picker.
func (b *browser) pickZone(v string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(() => { const s = document.getElementById("zone-pref"); s.value = %q;
		s.dispatchEvent(new Event("change", {bubbles: true})); return s.value; })()`, v))
}

func (b *browser) eval(js string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// TestBrowserNewScriptJob (issue 22, items 15 and 16): on the new-job form, typing a script
// handler turns the parameters into the highlighted script editor (dark in dark mode) and
// back; a bash job left in process is not created at first but warned of at the app field,
// and is created only when the user says so.
func TestBrowserNewScriptJob(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	for _, m := range shotModes {
		t.Run(m.name, func(t *testing.T) {
			b := newBrowser(t, h, m.width, m.height)
			if m.dark {
				b.preferDark()
			}
			b.login()
			name := "never-" + m.name
			b.do("open the new-job form", chromedp.Navigate(h.url+"/jobs/new"), chromedp.WaitVisible(chromedp.ID("name")),
				chromedp.SendKeys(chromedp.ID("name"), name))
			if got := b.eval(`document.querySelector("label[for=params]").innerText`); got != "Parameters" {
				t.Errorf("params label for noop = %q", got)
			}
			// The harness registers "shell" in process (a stand-in); bash is a script handler it lacks.
			b.do("type a script handler", fill("handler", "bash"), chromedp.WaitVisible(chromedp.CSS(".CodeMirror")))
			if got := b.eval(`document.querySelector("label[for=params]").innerText`); got != "Script" {
				t.Errorf("params label for shell = %q", got)
			}
			b.do("write the script", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[chromedp.Void](`document.querySelector(".CodeMirror").CodeMirror.setValue("#!/bin/sh\n# nightly clean-up\nfind /tmp -mtime +7 -delete\n")`)(ctx, tg)
				return err
			}))
			bg := b.eval(`getComputedStyle(document.querySelector(".CodeMirror")).backgroundColor`)
			if dark := bg == "rgb(18, 21, 27)"; dark != m.dark {
				t.Errorf("script editor background %s in %s", bg, m.name)
			}
			if m.dark {
				if c := b.eval(`getComputedStyle(document.querySelector(".CodeMirror .cm-comment")).color`); c != "rgb(127, 140, 163)" {
					t.Errorf("a comment in the dark script editor is %s, want the dark theme's", c)
				}
			}
			b.do("create", chromedp.Click(chromedp.CSS(`#job-form button.primary`)))
			b.waitJSOr("the warning at the app", `document.querySelector("main").innerText`, `document.getElementById("warn-app")?.textContent.includes("choose its app")`)
			if got := b.eval(`document.getElementById("app").getAttribute("aria-describedby")`); !strings.Contains(got, "warn-app") {
				t.Errorf("app field described by %q, want its warning", got)
			}
			if _, err := h.st.JobGetByKey(ctx, "default", name); err == nil {
				t.Fatalf("job %s created before the warning was accepted", name)
			}
			// The script survives the round trip, still in the editor.
			b.waitJS("the script kept", `document.querySelector(".CodeMirror")?.CodeMirror.getValue().includes("nightly clean-up")`)
			b.shot("jobs-new-shell-warning-" + m.name)
			b.do("create anyway", chromedp.Click(chromedp.ID("accept-warnings")))
			b.waitJS("the created job", `document.querySelector("main .alert")?.textContent === "Job created."`)
			j, err := h.st.JobGetByKey(ctx, "default", name)
			if err != nil || j.Handler != "bash" || !strings.Contains(j.Params, "find /tmp") {
				t.Fatalf("created job %+v (%v)", j, err)
			}
			// Back to a plain handler: the editor goes, the parameters box and the secret box return.
			b.do("open the form again", chromedp.Navigate(h.url+"/jobs/new"), chromedp.WaitVisible(chromedp.ID("name")),
				fill("handler", "shell"), chromedp.WaitVisible(chromedp.CSS(".CodeMirror")), fill("handler", "noop"))
			b.waitJS("the plain parameters", `!document.querySelector(".CodeMirror") && document.getElementById("params").offsetParent !== null && !document.getElementById("params_secret").disabled`)
			if m.name == "desktop-light" {
				b.shot(fmt.Sprintf("jobs-new-plain-%s", m.name))
			}
		})
	}
}

// TestBrowserJobListActionsAndZones (issue 22, items 14 and 19): the job list shows each
// job's schedule in its zone, its last run, and the row actions (run once, last log, edit
// script, next fire times); every time names its zone, in the zone the reader picks (the
// browser's, UTC, or the job's), and the pick is kept across pages.
func TestBrowserJobListActionsAndZones(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	sched := h.srv.Scheduler()
	berlin, err := sundial.Cron("0 30 9 ? * MON-FRI", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	report, err := sched.ScheduleJob(ctx, sundial.Job{Name: "morning-report", Handler: "echo", Params: "--daily"},
		sundial.Trigger{Schedule: berlin, TimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	script, err := sched.ScheduleJob(ctx, sundial.Job{Name: "rotate-logs", Handler: "shell", App: "ops", Params: "echo rotate\n"},
		sundial.Trigger{Schedule: mustCron(t, "0 0 3 * * ?")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sched.ScheduleJob(ctx, sundial.Job{Name: "by-hand", Handler: "noop"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	last := &store.Execution{JobID: report, ScheduledAt: now.UnixMilli(), FiredAt: now.UnixMilli(), StartedAt: now.UnixMilli(),
		FinishedAt: now.UnixMilli() + 900, Cause: store.CauseSchedule, State: store.ExecFailed, HandleMsg: "upstream down"}
	if _, err := h.st.ExecutionsInsert(ctx, []*store.Execution{last}); err != nil {
		t.Fatal(err)
	}
	for _, m := range shotModes {
		t.Run(m.name, func(t *testing.T) {
			b := newBrowser(t, h, m.width, m.height)
			if m.dark {
				b.preferDark()
			}
			// The browser's own zone, so "the browser's zone" is a zone the test knows.
			b.do("browser zone", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
				return err
			}))
			b.login()
			b.do("open the jobs", chromedp.Navigate(h.url+"/jobs"), chromedp.WaitVisible(chromedp.ID("job-table")))
			row := fmt.Sprintf("#job-row-%d", report)
			if got := b.text(row + " .sched-col"); got != "0 30 9 ? * MON-FRI (Europe/Berlin)" {
				t.Errorf("schedule column %q", got)
			}
			if got := b.text(fmt.Sprintf("#job-row-%d .sched-col", script)); got != "0 0 3 * * ? (UTC)" {
				t.Errorf("script job's schedule %q", got)
			}
			if got := b.eval(fmt.Sprintf(`document.querySelector("#job-row-%d .row-links").innerText`, script)); !strings.Contains(got, "Edit script") || strings.Contains(got, "Last log") {
				t.Errorf("script job's actions %q: want Edit script, no last log (it never ran)", got)
			}
			if got := b.eval(fmt.Sprintf(`document.getElementById("last-log-%d").getAttribute("href")`, report)); got != fmt.Sprintf("/executions/%d", last.ID) {
				t.Errorf("last log links to %q, want execution %d", got, last.ID)
			}
			if got := b.text(row + " td:last-child .badge"); got != "failed" {
				t.Errorf("last run %q", got)
			}
			// Every time names its zone: the browser's by default.
			labelled := func(zone string) {
				t.Helper()
				b.waitJSOr("times labelled "+zone, `[...document.querySelectorAll("main time")].map(e => e.textContent).join(" | ")`,
					fmt.Sprintf(`(() => { const ts = [...document.querySelectorAll("main time")];
					return ts.length > 0 && ts.every(e => /%s/.test(e.textContent)); })()`, zone))
			}
			labelled(`\b(EST|GMT-5)\b`)
			b.pickZone("utc")
			labelled(`\bUTC\b`)
			b.pickZone("job")
			// Berlin's next fire in its zone; the UTC job's in UTC.
			b.waitJS("Berlin's time", fmt.Sprintf(`/\b(CET|CEST|GMT\+[12])\b/.test(document.querySelector("%s td:nth-child(7) time").textContent)`, row))
			b.waitJS("the UTC job's time", fmt.Sprintf(`/\bUTC\b/.test(document.querySelector("#job-row-%d td:nth-child(7) time").textContent)`, script))
			// The next fire times, fetched when asked.
			b.do("next fire times", chromedp.Click(chromedp.CSS(fmt.Sprintf("#fires-%d summary", report))))
			b.waitJS("five fire times", fmt.Sprintf(`document.querySelectorAll("#fires-%d ol.fire-times time").length === 5`, report))
			b.waitJS("labelled in Berlin", fmt.Sprintf(`[...document.querySelectorAll("#fires-%d time")].every(e => /\b(CET|CEST|GMT\+[12])\b/.test(e.textContent))`, report))
			b.shot("jobs-list-" + m.name)
			// The pick holds on the next page.
			b.do("the dashboard", chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.ID("chart-title")))
			if got := b.eval(`document.getElementById("zone-pref").value`); got != "job" {
				t.Errorf("zone pick on the next page %q", got)
			}
			b.pickZone("utc")
			if m.name != shotModes[len(shotModes)-1].name {
				return
			}
			// Run once from the list (last, so the other modes see the seeded last run): the
			// new execution opens, and it is the job's last run.
			b.do("back to the jobs", chromedp.Navigate(h.url+"/jobs"), chromedp.WaitVisible(chromedp.ID("job-table")),
				chromedp.Click(chromedp.ID(fmt.Sprintf("run-%d", report))))
			b.waitJS("the started run", `/^Started execution \d+\.$/.test(document.querySelector("main .alert")?.textContent)`)
			got := <-h.ran
			if got.params != "--daily" {
				t.Errorf("run once ran with params %q, want the job's", got.params)
			}
			b.do("the jobs again", chromedp.Navigate(h.url+"/jobs"), chromedp.WaitVisible(chromedp.ID("job-table")))
			if href := b.eval(fmt.Sprintf(`document.getElementById("last-log-%d").getAttribute("href")`, report)); href != fmt.Sprintf("/executions/%d", got.execution) {
				t.Errorf("last log after the run links to %q, want execution %d", href, got.execution)
			}
		})
	}
}

// TestBrowserDashboardFigures (issue 22, item 17): the dashboard says which figures are live
// and which come from the report (and how stale it can be), and shows the report's success
// ratio, the same in the chart's legend and its card, equal to the stored report's.
func TestBrowserDashboardFigures(t *testing.T) {
	h := browserHarness(t)
	seedHistory(t, h)
	ctx := context.Background()
	today := time.Now().UTC()
	rows, err := h.st.ReportsDaily(ctx, today.AddDate(0, 0, -6).Format("2006-01-02"), today.Format("2006-01-02"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ok, failed int64
	for _, r := range rows {
		ok, failed = ok+r.Succeeded, failed+r.Failed
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("seeded report: %d succeeded, %d failed", ok, failed)
	}
	want := 100 * float64(ok) / float64(ok+failed)
	for _, m := range shotModes {
		t.Run(m.name, func(t *testing.T) {
			b := newBrowser(t, h, m.width, m.height)
			if m.dark {
				b.preferDark()
			}
			b.login()
			b.waitJS("the 7-day chart", `document.querySelector("#chart[data-drawn='7'] canvas") !== null`)
			var got float64
			card := b.text("#success-ratio")
			if _, err := fmt.Sscanf(card, "%f%%", &got); err != nil || got < want-0.051 || got > want+0.051 {
				t.Errorf("success ratio card %q, want %.1f%% (%d of %d)", card, want, ok, ok+failed)
			}
			if legend := b.text("#legend-ratio"); legend != "success ratio: "+card {
				t.Errorf("legend %q, card %q: they disagree", legend, card)
			}
			if legend := b.text("#chart-legend"); !strings.Contains(legend, fmt.Sprintf("failed: %d", failed)) || !strings.Contains(legend, "not finished: ") {
				t.Errorf("legend %q, want failed: %d and the not-finished count", legend, failed)
			}
			if fresh := b.text("#chart-fresh"); !strings.Contains(fresh, "recounts every 1m00s") {
				t.Errorf("chart freshness %q", fresh)
			}
			if stats := b.text(".stats"); !strings.Contains(stats, "running now (live)") || !strings.Contains(stats, "failures in the last 24 h (live)") {
				t.Errorf("stat cards %q: say which are live", stats)
			}
			// Issue 23: this node's lateness, backlog and heartbeat age, as its metrics have them.
			if health := b.text("#node-health"); !regexp.MustCompile(`^This node: its last fires started [0-9.]+ ?[a-z0-9]+ late, \d+ fire\(s\) wait to start, its last heartbeat (was [0-9.]+ ?[a-z0-9]+ ago|is not sent yet)\.$`).MatchString(strings.Join(strings.Fields(health), " ")) {
				t.Errorf("node health %q", health)
			}
			b.shot("dashboard-" + m.name)
		})
	}
}
