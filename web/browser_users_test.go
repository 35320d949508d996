package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// An admin creates a user and an API token on the users page: the new user is listed, the
// token's secret is shown once, and a reload shows the token without it.
func TestBrowserCreateUserAndToken(t *testing.T) {
	h := browserHarness(t)
	b := newBrowser(t, h, 1280, 1000)
	b.login()
	b.do("create a user",
		chromedp.Click(chromedp.CSS(`nav.main a[href="/users"]`)),
		chromedp.WaitVisible(chromedp.ID("create-user")),
		chromedp.SendKeys(chromedp.ID("name"), "olga"),
		chromedp.SendKeys(chromedp.ID("new-password"), "olga's long password"),
		chromedp.SetValue(chromedp.ID("role"), "operator"),
		chromedp.SendKeys(chromedp.ID("scope"), "billing"),
		chromedp.Click(chromedp.ID("create-user")))
	b.waitJS("the new user", `document.querySelector("main .alert")?.textContent === "User created."`)
	if row := b.text(`#users tbody tr:last-child`); !strings.Contains(row, "olga") || !strings.Contains(row, "operator") || !strings.Contains(row, "billing") {
		t.Fatalf("the new user's row reads %q", row)
	}
	u, err := h.st.UserGetByName(context.Background(), "olga")
	if err != nil || u.Role != "operator" || u.Scope != "billing" {
		t.Fatalf("stored user %+v (%v)", u, err)
	}

	b.do("create a token",
		chromedp.SendKeys(chromedp.ID("token-name"), "ci-deploy"),
		chromedp.Click(chromedp.ID("create-token")),
		chromedp.WaitVisible(chromedp.ID("new-token")))
	secret := b.text("#new-token")
	if !strings.HasPrefix(secret, "sdl_") {
		t.Fatalf("the shown token is %q", secret)
	}
	b.screenshot("users-token-created")
	b.do("reload the page", chromedp.Navigate(h.url+"/users"), chromedp.WaitVisible(chromedp.ID("token-list")))
	if row := b.text("#token-list tbody"); !strings.Contains(row, "ci-deploy") || !strings.Contains(row, "never") {
		t.Fatalf("the token list reads %q", row)
	}
	html, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerHTML`))
	if err != nil || strings.Contains(html, secret) {
		t.Fatalf("the token's secret is on the page again (%v)", err)
	}
	b.screenshot("users")
}
