package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLIUsersAndAudit drives the user commands end to end: create with a role and scope,
// list, update, reset and redeem a password, change one's own, disable; and reads what they
// did back from the audit log.
func TestCLIUsersAndAudit(t *testing.T) {
	s := startAPIServer(t)
	const pw = "Orchid-Tunnel-Basalt-64"
	code, _, errOut := runCLI(t, "password\n", "user", "create", "ana", "--role", "operator", "--server", s.url, "--token", s.token)
	if code != 2 || !strings.Contains(errOut, "password") {
		t.Fatalf("weak password: exit %d, %q; want 2 naming the field", code, errOut)
	}
	code, out, errOut := runCLI(t, pw+"\n", "user", "create", "ana", "--role", "operator", "--scope", "billing,mail",
		"--server", s.url, "--token", s.token, "-o", "json")
	var u api.User
	if code != 0 || mustUnmarshal(out, &u) != nil || u.Role != "operator" || strings.Join(u.Scope, ",") != "billing,mail" {
		t.Fatalf("user create: exit %d, %q %q", code, out, errOut)
	}
	// The API finds a user by name (GET /api/v1/users?name=), as the CLI's USER arguments do.
	c, err := api.NewClient(s.url, s.token)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.FindUser(context.Background(), "ana"); err != nil || got.ID != u.ID {
		t.Errorf("FindUser(ana): %+v, %v; want user %d", got, err, u.ID)
	}
	if _, err := c.FindUser(context.Background(), "nobody"); !api.IsNotFound(err) {
		t.Errorf("FindUser(nobody): %v, want the API's 404", err)
	}
	if out := s.mustCLI(t, "user", "list"); !strings.Contains(out, "ana") || !strings.Contains(out, "billing,mail") {
		t.Errorf("user list:\n%s", out)
	}
	if got := mustJSON[api.User](t, s, "user", "update", "ana", "--role", "viewer", "--scope", "*"); got.Role != "viewer" || got.Scope[0] != "*" {
		t.Errorf("user update: %+v", got)
	}

	// A token ana makes through her session carries her role: she cannot create a job.
	code, out, errOut = runCLI(t, pw+"\n", "token", "create", "ana-laptop", "--login", "ana", "--server", s.url, "-o", "json")
	var tok api.Token
	if code != 0 || mustUnmarshal(out, &tok) != nil {
		t.Fatalf("ana's token: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "", "job", "create", "j", "--handler", "noop", "--server", s.url, "--token", tok.Token)
	if code != 1 || !strings.Contains(errOut, "permission") {
		t.Errorf("viewer creating a job: exit %d, %q", code, errOut)
	}

	// Own password, by ana's token.
	const pw2 = "Marble-Canyon-Fennel-29"
	if code, _, errOut := runCLI(t, pw+"\n"+pw2+"\n", "user", "passwd", "--server", s.url, "--token", tok.Token); code != 0 {
		t.Fatalf("passwd: exit %d, %q", code, errOut)
	}
	// An admin's reset token, redeemed without other credentials.
	out = s.mustCLI(t, "user", "reset-password", "ana")
	i := strings.Index(out, "sdr_")
	if i < 0 {
		t.Fatalf("reset-password printed no token:\n%s", out)
	}
	reset := strings.Fields(out[i:])[0]
	if code, _, errOut := runCLI(t, "Walnut-Glacier-Ribbon-73\n", "user", "passwd", "--reset-token", reset, "--server", s.url); code != 0 {
		t.Fatalf("passwd --reset-token: exit %d, %q", code, errOut)
	}
	if got := mustJSON[api.User](t, s, "user", "disable", "ana"); !got.Disabled {
		t.Errorf("user disable: %+v", got)
	}

	entries := mustJSON[api.Page[api.AuditEntry]](t, s, "audit", "list", "--kind", "user", "--target", itoa(u.ID), "--all")
	var actions []string
	for _, e := range entries.Items {
		actions = append(actions, e.Action)
	}
	want := "user.update user.password user.reset_password user.password auth.login user.update user.create"
	if got := strings.Join(actions, " "); got != want {
		t.Errorf("audit of ana's account:\n got %s\nwant %s", got, want)
	}
	if out := s.mustCLI(t, "audit", "list", "--action", "user.create"); !strings.Contains(out, "user.create") || !strings.Contains(out, "admin") {
		t.Errorf("audit list --action:\n%s", out)
	}
}

func mustUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
