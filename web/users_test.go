package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// An admin creates a user (a bad password refused at its field, nothing stored), changes its
// role and apps, resets its password with a one-time token the user redeems on the reset
// page, and disables it. The user, a viewer, neither sees the page's link nor gets the page.
func TestUsersPage(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	admin := h.client()
	csrf := admin.login()
	admin.get("/").mustContain(t, `<a href="/users" >Users &amp; tokens</a>`)

	bad := admin.post("/users", csrf, url.Values{"name": {"vera"}, "password": {"short"}, "role": {"viewer"}}).mustStatus(t, http.StatusOK)
	bad.mustContain(t, `id="err-new-password" role="alert">must have at least 12`)
	if _, err := h.st.UserGetByName(ctx, "vera"); err == nil {
		t.Fatal("a refused user was stored")
	}
	admin.post("/users", csrf, url.Values{"name": {"vera"}, "password": {"a fine long password"}, "role": {"viewer"},
		"scope": {"billing, reports"}}).mustStatus(t, http.StatusSeeOther)
	u, err := h.st.UserGetByName(ctx, "vera")
	if err != nil || u.Role != store.RoleViewer {
		t.Fatalf("created user %+v (%v)", u, err)
	}
	admin.get("/users").mustContain(t, ">vera</a>", "<td>billing, reports</td>")

	// The viewer: no link, no page.
	vera := h.client()
	vcsrf := vera.loginAs("vera", "a fine long password")
	if home := vera.get("/").mustStatus(t, http.StatusOK); strings.Contains(home.body, `href="/users"`) {
		t.Fatal("a viewer sees the users link")
	}
	for _, p := range []string{"/users", "/users/1"} {
		vera.get(p).mustStatus(t, http.StatusForbidden)
	}
	vera.post("/users", vcsrf, url.Values{"name": {"mallory"}, "password": {"a fine long password"}, "role": {"admin"}}).
		mustStatus(t, http.StatusForbidden)

	userPath := "/users/" + itoa(u.ID)
	admin.post(userPath, csrf, url.Values{"role": {"operator"}, "scope": {"billing"}, "scripts": {"true"}}).mustStatus(t, http.StatusSeeOther)
	admin.post(userPath, csrf, url.Values{"role": {"king"}}).mustContain(t, `id="err-role" role="alert">want admin, operator or viewer`)
	if u, _ := h.st.UserGetByName(ctx, "vera"); u.Role != store.RoleOperator || u.Scope != "billing" || !u.Scripts {
		t.Fatalf("after the change: role %s scope %q scripts %v", u.Role, u.Scope, u.Scripts)
	}

	reset := admin.post(userPath+"/reset-password", csrf, nil).mustStatus(t, http.StatusOK).mustContain(t, "it is not shown again")
	m := regexp.MustCompile(`id="reset-token">([^<]+)<`).FindStringSubmatch(reset.body)
	if m == nil {
		t.Fatalf("no reset token on the page:\n%s", reset.body)
	}
	if again := admin.get(userPath); strings.Contains(again.body, m[1]) {
		t.Fatal("the reset token is shown again")
	}
	anon := h.client()
	form := anon.get("/reset?token="+url.QueryEscape(m[1])).mustStatus(t, http.StatusOK)
	anon.post("/reset", csrfOf(t, form), url.Values{"token": {m[1]}, "new_password": {"another long password"},
		"confirm_password": {"another long password"}}).mustStatus(t, http.StatusSeeOther)
	h.client().loginAs("vera", "another long password")

	admin.post(userPath, csrf, url.Values{"role": {"operator"}, "scope": {"billing"}, "disabled": {"true"}}).mustStatus(t, http.StatusSeeOther)
	admin.get("/users").mustContain(t, `<span class="badge bad">disabled</span>`)
	vera.get("/").mustStatus(t, http.StatusSeeOther) // its session ended with the disable
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
