package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// browser is a headless Chromium tab on the harness's console. It records what the page
// writes to the console, and the test fails if any of it is an error.
type browser struct {
	t   *testing.T
	h   *harness
	ctx context.Context

	mu     sync.Mutex
	errors []string
	// expected are console messages a test provokes (an error page's status): not failures.
	expected []string
}

// expectError tolerates console errors that contain text, such as the browser's note that
// a page answered with an error status the test asked for.
func (b *browser) expectError(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, text)
}

// newBrowser starts Debian's chromium with a fresh profile. Without chromium the test is
// skipped, except in CI, where the browser tests must run.
func newBrowser(t *testing.T, h *harness, width, height int) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed: .ci/run installs it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.NoFirstRun,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height))
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, h: h, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				msg := fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line)
				b.mu.Lock()
				switch {
				case strings.Contains(msg, "htmx:sendAbort"):
					// An aborted request is the console's design, not a failure: a newer preview
					// replaces one in flight (hx-sync replace), and leaving the page (a save)
					// aborts what it had in flight. htmx reports the abort as an
					// htmx:afterRequest error and then this one: both go.
					for i := len(b.errors) - 1; i >= 0; i-- {
						if strings.Contains(b.errors[i], "htmx:afterRequest") {
							b.errors = slices.Delete(b.errors, i, i+1)
							break
						}
					}
				case !slices.ContainsFunc(b.expected, func(e string) bool { return strings.Contains(msg, e) }):
					b.errors = append(b.errors, msg)
				}
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		// Console messages arrive asynchronously: a final round trip flushes them.
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.errors) > 0 {
			t.Errorf("errors in the browser console:\n%s", strings.Join(b.errors, "\n"))
		}
	})
	return b
}

// do runs steps, failing the test with what was being done.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// preferDark has the page render as for a system in dark mode.
func (b *browser) preferDark() {
	b.do("prefer dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// fill replaces the value of the input with the id by typing text into it.
func fill(id, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = ""`, id))(ctx, t)
			return err
		}),
		chromedp.SendKeys(chromedp.ID(id), text))
}

// waitJS waits until the JavaScript condition holds; a page that navigates meanwhile (a
// form's redirect) is polled again once it has loaded.
func (b *browser) waitJS(what, cond string) {
	b.t.Helper()
	if err := b.poll(cond); err != nil {
		b.t.Fatalf("wait for %s: %v", what, err)
	}
}

func (b *browser) poll(cond string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "(-32000)") {
			return err
		}
	}
}

// waitJSOr is waitJS that, on a timeout, shows the value of the JavaScript expression show.
func (b *browser) waitJSOr(what, show, cond string) {
	b.t.Helper()
	if err := b.poll(cond); err != nil {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](show))
		b.t.Fatalf("wait for %s: %v\n%s", what, err, got)
	}
}

// screenshot saves the page under testdata/out (ignored by git) for a person to look at.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("testdata", "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// login signs in through the login page.
func (b *browser) login() {
	b.t.Helper()
	b.do("log in",
		chromedp.Navigate(b.h.url+"/"),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), adminName),
		chromedp.SendKeys(chromedp.ID("password"), adminPass),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("chart-title")),
	)
}

func browserHarness(t *testing.T) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	return newHarness(t, "sqlite")
}

// seedHistory stores a week of finished executions of one job and its report rows, so the
// dashboard's chart has bars to draw, and a few scheduled jobs for its next fires.
func seedHistory(t *testing.T, h *harness) int64 {
	t.Helper()
	ctx := context.Background()
	sched := h.srv.Scheduler()
	id, err := sched.ScheduleJob(ctx, sundial.Job{Name: "report-builder", Handler: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	for i, spec := range []string{"0 0/15 * * * ?", "0 0 2 * * ?", "0 30 9 ? * MON-FRI"} {
		name := []string{"sync-inventory", "nightly-backup", "morning-report"}[i]
		if _, err := sched.ScheduleJob(ctx, sundial.Job{Name: name, Handler: "noop"},
			sundial.Trigger{Schedule: mustCron(t, spec)}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	var xs []*store.Execution
	days := map[string]bool{}
	for d := 0; d < 7; d++ {
		for i := 0; i < 3+d*2; i++ {
			fired := now.Add(-time.Duration(d)*24*time.Hour - time.Duration(i+1)*10*time.Minute)
			days[fired.UTC().Format("2006-01-02")] = true
			at := fired.UnixMilli()
			st := store.ExecSucceeded
			if i%4 == 1 {
				st = store.ExecFailed
			}
			xs = append(xs, &store.Execution{JobID: id, ScheduledAt: at, FiredAt: at, StartedAt: at, FinishedAt: at + int64(200+50*i),
				Cause: store.CauseManual, State: st, AlarmState: store.AlarmNone, HandleMsg: "ok"})
		}
	}
	if _, err := h.st.ExecutionsInsert(ctx, xs); err != nil {
		t.Fatal(err)
	}
	for day := range days {
		if _, err := h.st.ReportsRefresh(ctx, day); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestBrowserLoginAndDashboardChart(t *testing.T) {
	h := browserHarness(t)
	jobID := seedHistory(t, h)
	// Something runs while the dashboard is shown.
	talk, err := h.srv.Scheduler().ScheduleJob(context.Background(), sundial.Job{Name: "import-orders", Handler: "talker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Scheduler().TriggerNow(context.Background(), talk); err != nil {
		t.Fatal(err)
	}
	<-h.talking
	b := newBrowser(t, h, 1280, 900)
	b.login()
	if running := b.text("#running-title + .table-wrap"); !strings.Contains(running, "import-orders") {
		t.Fatalf("running now: %q", running)
	}
	b.waitJS("the 7-day chart", `document.querySelector("#chart[data-drawn='7'] canvas") !== null`)
	// The bars are drawn: the canvas has coloured pixels, not only the axes' grey.
	b.waitJS("bars on the canvas", `(() => {
		const c = document.querySelector("#chart canvas"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let coloured = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && Math.abs(d[i] - d[i+1]) > 40) coloured++;
		return coloured > 500; })()`)
	if legend := b.text("#chart-legend"); !strings.Contains(legend, "succeeded: ") || !strings.Contains(legend, "failed: ") {
		t.Fatalf("chart legend %q", legend)
	}
	b.screenshot("dashboard")
	b.do("switch to 30 days", chromedp.Click(chromedp.CSS(`button[data-days="30"]`)))
	b.waitJS("the 30-day chart", `document.querySelector("#chart[data-drawn='30']") !== null`)
	// The job's page draws its success rate and durations.
	b.do("open the job", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", h.url, jobID)))
	b.waitJS("the job chart", `document.querySelector("#job-chart[data-drawn] canvas") !== null`)
	b.screenshot("job-detail")
	// Dark mode follows the system.
	b.do("prefer dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}), chromedp.Navigate(h.url+"/"))
	b.waitJS("the dark chart", `document.querySelector("#chart[data-drawn='7'] canvas") !== null`)
	bg, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil || bg != "rgb(18, 21, 27)" {
		t.Fatalf("dark background %q (%v)", bg, err)
	}
	b.screenshot("dashboard-dark")
}

func TestBrowserCreateCronJobWithPreview(t *testing.T) {
	h := browserHarness(t)
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("open the editor",
		chromedp.Navigate(h.url+"/jobs/new"),
		chromedp.WaitVisible(chromedp.ID("name")),
		// Open "More" to fix the start, so the preview's times are known.
		chromedp.Click(chromedp.CSS("details summary")),
		chromedp.SendKeys(chromedp.ID("triggers-0-start"), "2030-01-01T00:00:00Z"),
		chromedp.SendKeys(chromedp.ID("name"), "berlin-mornings"),
		fill("triggers-0-time_zone", "Europe/Berlin"),
		fill("triggers-0-cron", "0 0 12 * * ?"),
	)
	b.waitJS("the preview of the first expression",
		`document.querySelector("#preview-times li")?.textContent.startsWith("Tue 2030-01-01 12:00:00 CET")`)
	// Typing more of the expression updates the preview as it goes.
	b.do("type a weekday expression",
		fill("triggers-0-cron", "0 15 10 ? * MON-FRI"))
	b.waitJSOr("the preview of the weekday expression", `document.getElementById("triggers-0-cron").value + " | " + document.getElementById("trig-triggers-0").textContent.replace(/\s+/g, " ")`,
		`document.querySelector("#preview-times li")?.textContent.startsWith("Tue 2030-01-01 10:15:00 CET")`)
	items, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#preview-times li")].map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Tue 2030-01-01 10:15:00 CET", "Wed 2030-01-02 10:15:00 CET", "Thu 2030-01-03 10:15:00 CET",
		"Fri 2030-01-04 10:15:00 CET", "Mon 2030-01-07 10:15:00 CET", "Tue 2030-01-08 10:15:00 CET",
		"Wed 2030-01-09 10:15:00 CET", "Thu 2030-01-10 10:15:00 CET", "Fri 2030-01-11 10:15:00 CET", "Mon 2030-01-14 10:15:00 CET"}
	if strings.Join(items, "|") != strings.Join(want, "|") {
		t.Fatalf("preview:\n%s\nwant:\n%s", strings.Join(items, "\n"), strings.Join(want, "\n"))
	}
	b.screenshot("job-editor")
	b.do("create the job",
		chromedp.Click(chromedp.CSS(`#job-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("run-now")))
	if flash := b.text("main .alert"); flash != "Job created." {
		t.Fatalf("flash %q", flash)
	}
	j, err := h.st.JobGetByKey(context.Background(), "default", "berlin-mornings")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.st.TriggerList(context.Background(), store.TriggerFilter{JobID: j.ID})
	if err != nil || len(ts) != 1 || ts[0].TimeZone != "Europe/Berlin" ||
		time.UnixMilli(ts[0].NextFireAt).UTC().Format(time.RFC3339) != "2030-01-01T09:15:00Z" {
		t.Fatalf("stored triggers %+v (%v)", ts, err)
	}
}

func TestBrowserBadCronShowsErrorAtField(t *testing.T) {
	h := browserHarness(t)
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("type a bad expression",
		chromedp.Navigate(h.url+"/jobs/new"),
		chromedp.WaitVisible(chromedp.ID("name")),
		chromedp.SendKeys(chromedp.ID("name"), "never"),
		fill("triggers-0-cron", "0 0 25 * * ?"))
	b.waitJS("the preview's error at the field",
		`document.getElementById("err-triggers-0-cron").textContent.includes("cron expression")`)
	b.do("submit it anyway",
		chromedp.Click(chromedp.CSS(`#job-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#triggers-0-cron[aria-invalid=true]`)))
	if msg := b.text("#err-triggers-0-cron"); !strings.Contains(msg, "cron expression") {
		t.Fatalf("the API's error at the field is %q", msg)
	}
	if v, _ := chromedp.Run(b.ctx, chromedp.Value(chromedp.ID("name"))); v != "never" {
		t.Fatalf("the form lost the name: %q", v)
	}
	b.screenshot("bad-cron")
	if js, _ := h.st.JobList(context.Background(), store.JobFilter{}); len(js) != 0 {
		t.Fatalf("a bad form stored %d jobs", len(js))
	}
}

func TestBrowserRunNowAndLiveOutput(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "talk", Handler: "talker"})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("open the run-now dialog",
		chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", h.url, id)),
		chromedp.Click(chromedp.ID("run-now")),
		chromedp.WaitVisible(chromedp.ID("params")),
		chromedp.SendKeys(chromedp.ID("params"), "--verbose --region=eu"))
	b.screenshot("run-dialog")
	b.do("run the job now with parameters",
		chromedp.Click(chromedp.ID("run-submit")),
		chromedp.WaitVisible(chromedp.ID("output")))
	execID := <-h.talking
	if x, err := h.st.ExecutionGet(ctx, execID); err != nil || x.Params != "--verbose --region=eu" {
		t.Fatalf("the run's recorded params %q (%v)", x.Params, err)
	}
	if p := b.text("#exec-params"); p != "--verbose --region=eu" {
		t.Fatalf("the execution page shows params %q", p)
	}
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, fmt.Sprintf("/executions/%d", execID)) {
		t.Fatalf("run now opened %q (%v), want execution %d", loc, err, execID)
	}
	// An executor reports output while the run goes on (POST /api/v1/executor/logs stores it
	// this way); the page's tail shows each line as it comes.
	for i := 1; i <= 3; i++ {
		if _, err := h.st.ExecutionLogAppend(ctx, execID, []store.LogLine{{Line: int64(i), At: time.Now().UnixMilli(),
			Message: fmt.Sprintf("progress %d/3", i)}}); err != nil {
			t.Fatal(err)
		}
		b.waitJS(fmt.Sprintf("line %d in the tail", i), fmt.Sprintf(`document.getElementById("output").textContent.includes("progress %d/3")`, i))
	}
	if st := b.text("#tail-status"); !strings.Contains(st, "following") {
		t.Fatalf("tail status %q while running", st)
	}
	b.screenshot("live-output")
	close(h.release)
	b.waitJS("the end of the run", `document.getElementById("tail-status").textContent === "ended: succeeded"`)
	if badge := b.text("#exec-state .badge"); badge != "succeeded" {
		t.Fatalf("state badge %q", badge)
	}
}

func TestBrowserPauseAndResume(t *testing.T) {
	h := browserHarness(t)
	id, err := h.srv.Scheduler().ScheduleJob(context.Background(), sundial.Job{Name: "pausable", Handler: "noop"},
		sundial.Trigger{Schedule: mustCron(t, "0 0 3 * * ?")})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("pause", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", h.url, id)), chromedp.Click(chromedp.ID("pause-job")))
	b.waitJS("the paused page", `document.querySelector("main .alert")?.textContent === "Job paused."`)
	if flash, state := b.text("main .alert"), b.text("#triggers .badge"); flash != "Job paused." || state != "paused" {
		t.Fatalf("after pause: flash %q, trigger %q", flash, state)
	}
	b.screenshot("paused")
	b.do("resume", chromedp.Click(chromedp.ID("resume-job")))
	b.waitJS("the resumed page", `document.querySelector("main .alert")?.textContent === "Job resumed."`)
	if flash, state := b.text("main .alert"), b.text("#triggers .badge"); flash != "Job resumed." || state != "waiting" {
		t.Fatalf("after resume: flash %q, trigger %q", flash, state)
	}
	// Bulk: pause from the list.
	b.do("bulk pause", chromedp.Navigate(h.url+"/jobs"), chromedp.Click(chromedp.ID(fmt.Sprintf("sel-%d", id))),
		chromedp.Click(chromedp.CSS(`button[value=pause]`)))
	b.waitJS("the list after the bulk pause", `document.querySelector("main .alert")?.textContent === "Paused 1 job(s)."`)
	if flash := b.text("main .alert"); flash != "Paused 1 job(s)." {
		t.Fatalf("bulk flash %q", flash)
	}
	ts, _ := h.st.TriggerList(context.Background(), store.TriggerFilter{JobID: id})
	if len(ts) != 1 || ts[0].State != store.TriggerPaused {
		t.Fatalf("after bulk pause: %+v", ts)
	}
}

func mustCron(t *testing.T, expr string) *schedule.Cron {
	t.Helper()
	c, err := sundial.Cron(expr, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBrowserEditShellScript(t *testing.T) {
	h := browserHarness(t)
	id, err := h.srv.Scheduler().ScheduleJob(context.Background(), sundial.Job{Name: "cleanup", Handler: "shell", App: "ops",
		Params: "#!/bin/sh\n# remove old files\nfind /tmp -mtime +7 -delete\n"})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	b.do("open the script", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d/edit", h.url, id)),
		chromedp.WaitVisible(chromedp.CSS(".CodeMirror")))
	b.waitJS("the highlighted script", `document.querySelector(".CodeMirror .cm-comment")?.textContent.includes("remove old files")`)
	b.do("append a line", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		// The end of the document, then a new line typed as a person would.
		_, err := chromedp.Evaluate[chromedp.Void](`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror;
			cm.focus(); cm.setCursor(cm.lineCount(), 0); })()`)(ctx, tg)
		return err
	}), chromedp.SendKeys(chromedp.CSS(".CodeMirror textarea"), `echo "cleaned"`))
	b.screenshot("script-editor")
	b.do("save", chromedp.Click(chromedp.CSS(`#job-form button[type=submit]`)))
	b.waitJS("the saved job", `document.querySelector("main .alert")?.textContent === "Job saved."`)
	j, err := h.st.JobGet(context.Background(), id)
	if err != nil || !strings.HasSuffix(j.Params, "-delete\necho \"cleaned\"") {
		t.Fatalf("saved script %q (%v)", j.Params, err)
	}
}
