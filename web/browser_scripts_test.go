package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/sundial-scheduler/sundial"
)

// An operator saves a shell script twice with notes, compares the older save with the current
// script, and restores it: the job's script is the older text again and the history shows the
// restore as the newest version.
func TestBrowserScriptVersionsRestore(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "rotate", Handler: "shell", App: "ops",
		Params: "echo first\n", ScriptNote: "imported"})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h, 1280, 900)
	b.login()
	save := func(script, note string) {
		b.do("edit the script", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d/edit", h.url, id)),
			chromedp.WaitVisible(chromedp.CSS(".CodeMirror")),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
					`document.querySelector(".CodeMirror").CodeMirror.setValue(%q)`, script))(ctx, tg)
				return err
			}),
			fill("script_note", note),
			chromedp.Click(chromedp.CSS(`#job-form button[type=submit]`)))
		b.waitJS("the saved job", `document.querySelector("main .alert")?.textContent === "Job saved."`)
	}
	save("echo second\nls /var/log\n", "list the logs")
	save("echo third\nrm -rf /var/log/old\n", "remove old logs")
	b.waitJS("the history", `document.querySelectorAll("#script-versions tbody tr").length === 3`)
	b.screenshot("script-history")

	b.do("compare version 2", chromedp.Click(chromedp.ID("compare-v2")))
	b.waitJS("the diff", `[...document.querySelectorAll("#script-diff .del")].some(e => e.textContent === "− ls /var/log")`)
	if got := b.text("#script-diff .add"); got != "+ echo third" {
		t.Errorf("first added line of the diff = %q, want %q", got, "+ echo third")
	}
	b.screenshot("script-compare")
	b.do("restore version 2", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`)(ctx, tg)
		return err
	}), chromedp.Click(chromedp.ID("restore")))
	b.waitJS("the restore", `document.querySelector("main .alert")?.textContent === "Script restored as version 4."`)
	b.screenshot("script-restored")

	j, err := h.st.JobGet(ctx, id)
	if err != nil || j.Params != "echo second\nls /var/log\n" {
		t.Fatalf("script after restore = %q (%v), want version 2's", j.Params, err)
	}
	vs, err := h.st.ScriptVersionList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, v := range vs {
		notes = append(notes, fmt.Sprintf("v%d %s", v.Version, v.Note))
	}
	want := []string{"v4 restored version 2", "v3 remove old logs", "v2 list the logs", "v1 imported"}
	if fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Fatalf("history = %v, want %v", notes, want)
	}
}
