package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
