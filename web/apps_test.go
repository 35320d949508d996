package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial/store"
)

// addUser stores a user of role with password pw.
func (h *harness) addUser(name, pw string, role store.Role, scope string) {
	h.t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.st.UserInsert(context.Background(), &store.User{Name: name, PasswordHash: string(hash), Role: role, Scope: scope}); err != nil {
		h.t.Fatal(err)
	}
}

var secretRE = regexp.MustCompile(`id="new-credential">(sde_[^<]+)<`)

// An admin creates, changes and deletes an app and issues, rotates and revokes its executor
// credential on the console; each change is the apps API's (its field errors at the inputs),
// the secret is shown once, and deleting the app revokes its credential.
func TestConsoleAppLifecycle(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	admin := h.client()
	csrf := admin.login()
	admin.get("/apps").mustStatus(t, http.StatusOK).mustContain(t, `id="new-app"`, `id="create-app"`)

	// The API's refusals land at the fields.
	p := admin.post("/apps", csrf, url.Values{"name": {"legacy"}, "address_mode": {"manual"}, "protocol": {"sundial"}}).mustStatus(t, http.StatusOK)
	if !fieldErr(p.body, "addresses") {
		t.Fatalf("a manual app without addresses: no error at addresses:\n%s", p.body)
	}
	p = admin.post("/apps", csrf, url.Values{"name": {"bad\x1bname"}, "address_mode": {"auto"}, "protocol": {"sundial"}}).mustStatus(t, http.StatusOK)
	if !fieldErr(p.body, "name") {
		t.Fatalf("a bad name: no error at name:\n%s", p.body)
	}
	p = admin.post("/apps", csrf, url.Values{"name": {"xxl"}, "address_mode": {"auto"}, "protocol": {"xxl-job"}}).mustStatus(t, http.StatusOK)
	if !fieldErr(p.body, "protocol_version") {
		t.Fatalf("an xxl-job app without a generation: no error at protocol_version:\n%s", p.body)
	}

	p = admin.post("/apps", csrf, url.Values{"name": {"legacy"}, "title": {"Legacy batch"}, "address_mode": {"manual"},
		"addresses": {"http://10.0.0.5:9999\nhttp://10.0.0.6:9999"}, "protocol": {"sundial"}}).mustStatus(t, http.StatusSeeOther)
	if loc := p.header.Get("Location"); loc != "/apps/legacy?done=app-created" {
		t.Fatalf("created: location %q", loc)
	}
	a, err := h.st.AppGet(ctx, "legacy")
	if err != nil || a.Title != "Legacy batch" || a.AddressMode != store.AddressManual || len(a.Addresses) != 2 {
		t.Fatalf("stored app %+v (%v)", a, err)
	}
	// Creating does not replace.
	p = admin.post("/apps", csrf, url.Values{"name": {"legacy"}, "address_mode": {"auto"}, "protocol": {"sundial"}}).mustStatus(t, http.StatusOK)
	if !fieldErr(p.body, "name") || !strings.Contains(p.body, "exists already") {
		t.Fatalf("creating an existing app: no error at name:\n%s", p.body)
	}
	admin.get("/apps/legacy?done=app-created").mustStatus(t, http.StatusOK).mustContain(t, "App created.", "Legacy batch",
		"http://10.0.0.5:9999, http://10.0.0.6:9999", `id="issue-credential"`, `id="save-app"`)

	// A change to an xxl-job app: the generation and the token are the API's rules.
	p = admin.post("/apps/legacy", csrf, url.Values{"title": {"Legacy"}, "address_mode": {"manual"}, "addresses": {"http://10.0.0.5:9999"},
		"protocol": {"xxl-job"}, "protocol_version": {"2.x"}, "xxl_access_token": {"default_token"}}).mustStatus(t, http.StatusOK)
	if !fieldErr(p.body, "xxl_access_token") || strings.Contains(p.body, `value="default_token"`) {
		t.Fatalf("XXL-JOB's default token: no error at xxl_access_token, or the token sent back:\n%s", p.body)
	}
	admin.post("/apps/legacy", csrf, url.Values{"title": {"Legacy"}, "address_mode": {"manual"}, "addresses": {"http://10.0.0.5:9999"},
		"protocol": {"sundial"}, "protocol_version": {"2.x"}}).mustStatus(t, http.StatusSeeOther)
	if a, err := h.st.AppGet(ctx, "legacy"); err != nil || a.Title != "Legacy" || len(a.Addresses) != 1 {
		t.Fatalf("changed app %+v (%v)", a, err)
	}

	// The credential: its secret on the answer that made it, only.
	p = admin.post("/apps/legacy/credential/issue", csrf, nil).mustStatus(t, http.StatusOK)
	m := secretRE.FindStringSubmatch(p.body)
	if m == nil || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issued: no secret shown, or the page may be cached (%q):\n%s", p.header.Get("Cache-Control"), p.body)
	}
	secret := m[1]
	if _, err := h.st.AppCredentialByHash(ctx, sha256hex(secret)); err != nil {
		t.Fatalf("the shown secret is not the stored credential's: %v", err)
	}
	again := admin.get("/apps/legacy").mustStatus(t, http.StatusOK).mustContain(t, `id="rotate-credential"`, `id="revoke-credential"`)
	if strings.Contains(again.body, secret) || strings.Contains(again.body, `id="new-credential"`) {
		t.Fatalf("the secret is shown again:\n%s", again.body)
	}
	p = admin.post("/apps/legacy/credential/rotate", csrf, nil).mustStatus(t, http.StatusOK).mustContain(t, "the old secret no longer works")
	rotated := secretRE.FindStringSubmatch(p.body)
	if rotated == nil || rotated[1] == secret {
		t.Fatalf("rotated: %v", rotated)
	}
	if _, err := h.st.AppCredentialByHash(ctx, sha256hex(secret)); err == nil {
		t.Fatal("the rotated-out secret still works")
	}
	admin.post("/apps/legacy/credential/revoke", csrf, nil).mustStatus(t, http.StatusSeeOther)
	admin.get("/apps/legacy?done=credential-revoked").mustStatus(t, http.StatusOK).mustContain(t, "credential revoked", `id="issue-credential"`)
	if _, err := h.st.AppCredentialByHash(ctx, sha256hex(rotated[1])); err == nil {
		t.Fatal("the revoked secret still works")
	}
	admin.post("/apps/legacy/credential/revoke", csrf, nil).mustStatus(t, http.StatusNotFound)

	// Deleting the app revokes the credential it has.
	p = admin.post("/apps/legacy/credential/issue", csrf, nil).mustStatus(t, http.StatusOK)
	last := secretRE.FindStringSubmatch(p.body)[1]
	admin.post("/apps/legacy/delete", csrf, nil).mustStatus(t, http.StatusSeeOther)
	admin.get("/apps?done=app-deleted").mustStatus(t, http.StatusOK).mustContain(t, "App deleted")
	if _, err := h.st.AppCredentialByHash(ctx, sha256hex(last)); err == nil {
		t.Fatal("the deleted app's credential still works")
	}
	admin.get("/apps/legacy").mustStatus(t, http.StatusNotFound)
}

// A viewer or an operator (of some apps or of all) sees the apps without their forms, and a change they send anyway
// (a form copied from an admin's page) is refused by the operation: nothing changes.
func TestConsoleAppWritesRefusedToNonAdmins(t *testing.T) {
	h := newHarness(t, "sqlite")
	ctx := context.Background()
	if err := h.st.AppPut(ctx, &store.App{Name: "billing", Title: "Billing", AddressMode: store.AddressAuto}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AppCredentialCreate(ctx, &store.AppCredential{App: "billing", Hash: "h", CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	h.addUser("vera", "vera's long password", store.RoleViewer, "*")
	h.addUser("otto", "otto's long password", store.RoleOperator, "billing")
	h.addUser("oscar", "oscar's long password", store.RoleOperator, "*")
	for _, u := range []string{"vera", "otto", "oscar"} {
		c := h.client()
		csrf := c.loginAs(u, u+"'s long password")
		for _, p := range []string{"/apps", "/apps/billing"} {
			got := c.get(p).mustStatus(t, http.StatusOK).mustContain(t, "Billing")
			for _, form := range []string{`id="new-app"`, `id="save-app"`, `id="delete-app"`, `id="credential"`, "/credential/"} {
				if strings.Contains(got.body, form) {
					t.Fatalf("%s sees %s on %s", u, form, p)
				}
			}
		}
		for _, path := range []string{"/apps", "/apps/billing", "/apps/billing/delete", "/apps/billing/credential/issue",
			"/apps/billing/credential/rotate", "/apps/billing/credential/revoke", "/apps/payroll/credential/issue"} {
			c.post(path, csrf, url.Values{"name": {"payroll"}, "title": {"Mine"}, "address_mode": {"auto"}, "protocol": {"sundial"}}).
				mustStatus(t, http.StatusForbidden).mustContain(t, "needs the admin permission")
		}
	}
	if a, err := h.st.AppGet(ctx, "billing"); err != nil || a.Title != "Billing" {
		t.Fatalf("billing after refused changes: %+v (%v)", a, err)
	}
	if _, err := h.st.AppGet(ctx, "payroll"); err == nil {
		t.Fatal("a refused create made the app")
	}
	creds, err := h.st.AppCredentialList(ctx)
	if err != nil || len(creds) != 1 || creds[0].Hash != "h" {
		t.Fatalf("credentials after refused changes: %+v (%v)", creds, err)
	}
}

// fieldErr reports whether the page shows an error at the input of field.
func fieldErr(body, field string) bool {
	i := strings.Index(body, `id="err-`+field+`" role="alert">`)
	return i >= 0 && !strings.HasPrefix(body[i+len(`id="err-`+field+`" role="alert">`):], "<")
}

// sha256hex is a secret as the store keeps it.
func sha256hex(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
