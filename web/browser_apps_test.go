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

// acceptConfirms makes the page's "are you sure?" questions answer yes.
func (b *browser) acceptConfirms() {
	b.do("accept confirms", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`)(ctx, tg)
		return err
	}))
}

// An admin creates an app on the console, issues its executor credential (shown once),
// rotates and revokes it, and deletes the app.
func TestBrowserAppLifecycle(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("create an app",
		chromedp.Click(chromedp.CSS(`nav.main a[href="/apps"]`)),
		chromedp.WaitVisible(chromedp.ID("create-app")),
		chromedp.SendKeys(chromedp.ID("name"), "legacy"),
		chromedp.SendKeys(chromedp.ID("title"), "Legacy batch"),
		chromedp.SetValue(chromedp.ID("address_mode"), "manual"),
		chromedp.SendKeys(chromedp.ID("addresses"), "http://10.0.0.5:9999\nhttp://10.0.0.6:9999"),
		chromedp.Click(chromedp.ID("create-app")))
	b.waitJS("the new app's page", `document.querySelector("main .alert")?.textContent === "App created."`)
	if a, err := h.st.AppGet(ctx, "legacy"); err != nil || a.AddressMode != store.AddressManual || len(a.Addresses) != 2 {
		t.Fatalf("stored app %+v (%v)", a, err)
	}
	b.screenshot("app-created")

	b.do("issue a credential", chromedp.Click(chromedp.ID("issue-credential")), chromedp.WaitVisible(chromedp.ID("new-credential")))
	first := b.text("#new-credential")
	if !strings.HasPrefix(first, "sde_") {
		t.Fatalf("the shown credential is %q", first)
	}
	if _, err := h.st.AppCredentialByHash(ctx, sha256hex(first)); err != nil {
		t.Fatalf("the shown secret is not the stored one: %v", err)
	}
	b.screenshot("app-credential-issued")
	b.acceptConfirms()
	b.do("rotate it", chromedp.Click(chromedp.ID("rotate-credential")))
	b.waitJS("the rotated secret", fmt.Sprintf(`(document.getElementById("new-credential")?.textContent || %q) !== %q`, first, first))
	b.do("reload", chromedp.Navigate(h.url+"/apps/legacy"), chromedp.WaitVisible(chromedp.ID("credential-state")))
	if html, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerHTML`)); err != nil || strings.Contains(html, "sde_") {
		t.Fatalf("a secret is on the page after a reload (%v)", err)
	}
	b.acceptConfirms()
	b.do("revoke it", chromedp.Click(chromedp.ID("revoke-credential")))
	b.waitJS("the revoke", `!!document.getElementById("issue-credential")`)
	if creds, err := h.st.AppCredentialList(ctx); err != nil || len(creds) != 0 {
		t.Fatalf("credentials after the revoke: %+v (%v)", creds, err)
	}
	b.acceptConfirms()
	b.do("delete the app", chromedp.Click(chromedp.ID("delete-app")))
	b.waitJS("the apps page", `document.querySelector("main .alert")?.textContent.startsWith("App deleted")`)
	if _, err := h.st.AppGet(ctx, "legacy"); err == nil {
		t.Fatal("the app is still stored")
	}
}

// The pages issue 22 changed, in light and dark, on a desktop and a phone: nothing wider
// than the screen, the output's text in one column past its line numbers, the executions
// table whole on a phone. The screenshots are for a person to look at.
func TestBrowserChangedPages(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	sched := h.srv.Scheduler()
	if err := h.st.AppPut(ctx, &store.App{Name: "billing", Title: "Billing", AddressMode: store.AddressManual,
		Addresses: []string{"http://10.0.0.5:9999"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AppCredentialCreate(ctx, &store.AppCredential{App: "billing", Hash: "h", CreatedAt: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if err := sched.PutCalendar(ctx, sundial.Calendar{Name: "holidays", Spec: "holiday:2026-12-25"}); err != nil {
		t.Fatal(err)
	}
	long := "--rows=" + strings.Repeat("0123456789abcdef", 60*1024/16)
	bulk := storeJob(t, h, "reports", "bulk-import", long, store.TriggerComplete)
	now := time.Now().UnixMilli()
	ended := storeRun(t, h, &store.Execution{JobID: bulk.ID, FiredAt: now - 9000, ScheduledAt: now - 9000, StartedAt: now - 9000,
		FinishedAt: now - 7000, State: store.ExecSucceeded, HandleCode: 200, Params: long})
	var lines []store.LogLine
	for i := int64(1); i <= 12; i++ {
		lines = append(lines, store.LogLine{Line: i, At: now, Message: fmt.Sprintf("imported batch %d", i)})
	}
	if _, err := h.st.ExecutionLogAppend(ctx, ended.ID, lines); err != nil {
		t.Fatal(err)
	}
	remote := storeRun(t, h, &store.Execution{JobID: bulk.ID, FiredAt: now - 2000, ScheduledAt: now - 2000, State: store.ExecRunning,
		ExecutorAddress: "http://10.0.0.5:9999", ExecutorApp: "billing"})
	for i := 0; i < 4; i++ {
		storeRun(t, h, &store.Execution{JobID: bulk.ID, FiredAt: now - int64(i)*60_000, ScheduledAt: now, StartedAt: now - int64(i)*60_000,
			FinishedAt: now - int64(i)*60_000 + 1500, State: store.ExecFailed, ExecutorAddress: "http://10.200.300.400:9999"})
	}

	pages := []struct{ name, path string }{
		{"apps", "/apps"}, {"app", "/apps/billing"}, {"calendars", "/calendars?name=holidays"},
		{"executions", "/executions"}, {"executions-bad-filter", "/executions?job_id=abc"},
		{"job-long-params", fmt.Sprintf("/jobs/%d", bulk.ID)}, {"run-ended", fmt.Sprintf("/executions/%d", ended.ID)},
		{"run-remote", fmt.Sprintf("/executions/%d", remote.ID)}, {"not-found", "/no-such-page"},
	}
	for _, mode := range []struct {
		name  string
		width int
		dark  bool
	}{{"desktop-light", 1280, false}, {"desktop-dark", 1280, true}, {"phone-light", 375, false}, {"phone-dark", 375, true}} {
		t.Run(mode.name, func(t *testing.T) {
			b := newBrowser(t, h, mode.width, 800)
			if mode.dark {
				b.preferDark()
			}
			b.expectError("/executions?job_id=abc")
			b.expectError("/no-such-page")
			b.login()
			for _, p := range pages {
				b.do("open "+p.path, chromedp.Navigate(h.url+p.path), chromedp.WaitVisible(chromedp.ID("main")))
				w, err := chromedp.Run(b.ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
				if err != nil {
					t.Fatal(err)
				}
				if w > mode.width {
					t.Errorf("%s is %d px wide on a %d px screen", p.path, w, mode.width)
				}
				// A table of runs or executors is whole in its box: none scrolls sideways, its
				// last column out of sight.
				cut, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(
					".table-wrap:has(a[href^='/executions/']), .table-wrap.instances")]
					.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.scrollWidth + ">" + e.clientWidth)`))
				if err != nil {
					t.Fatal(err)
				}
				if len(cut) > 0 {
					t.Errorf("%s: tables wider than their box: %v", p.path, cut)
				}
				b.screenshot(fmt.Sprintf("issue22-%s-%s", mode.name, p.name))
			}
			// The output's lines start in one column at line 9 and line 10.
			b.do("open the ended run", chromedp.Navigate(fmt.Sprintf("%s/executions/%d", h.url, ended.ID)), chromedp.WaitVisible(chromedp.ID("output")))
			lefts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#output .ln")].map(ln => {
				const r = document.createRange(); r.setStart(ln.nextSibling, 0); r.setEnd(ln.nextSibling, 1);
				return r.getBoundingClientRect().left })`))
			if err != nil {
				t.Fatal(err)
			}
			if len(lefts) != 12 || lefts[8] != lefts[9] || lefts[0] != lefts[11] {
				t.Errorf("the output's text starts at %v: want one column", lefts)
			}
		})
	}
}
