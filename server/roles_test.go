package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// strongPassword passes the strength check; each user gets its own.
func strongPassword(name string) string { return "violet-Harbor-" + name + "-Quince-81" }

// userClient creates a user through the admin's client and returns a client logged in as it.
func (e *env) userClient(req api.UserRequest) (*api.Client, *api.User) {
	e.t.Helper()
	ctx := context.Background()
	req.Password = strongPassword(req.Name)
	u := must(e.client().CreateUser(ctx, req))(e.t)
	c, err := api.NewClient(e.url, "", api.WithRequestTimeout(30*time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	must(c.Login(ctx, req.Name, req.Password))(e.t)
	return c, u
}

func wantStatus(t *testing.T, what string, err error, status int) *api.Error {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != status {
		t.Fatalf("%s: %v, want HTTP %d", what, err, status)
	}
	return ae
}

func jobReq(name, app, handler string) api.JobRequest {
	return api.JobRequest{Name: name, App: app, Handler: handler}
}

// TestRoles checks the policy end to end on every database: a viewer cannot create a job, an
// operator cannot act outside its apps nor make script jobs without the scripts permission,
// and every change is in the audit log with its before and after.
func TestRoles(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()

		// Password strength is checked, with the field named.
		_, err := admin.CreateUser(ctx, api.UserRequest{Name: "weak", Password: "password1234", Role: "viewer"})
		if ae := wantStatus(t, "weak password", err, 400); ae.Field != "password" {
			t.Fatalf("weak password: field %q, want password", ae.Field)
		}
		_, err = admin.CreateUser(ctx, api.UserRequest{Name: "short", Password: "x9$Kq!", Role: "viewer"})
		wantStatus(t, "short password", err, 400)
		_, err = admin.CreateUser(ctx, api.UserRequest{Name: "bad-role", Password: strongPassword("b"), Role: "root"})
		wantStatus(t, "unknown role", err, 400)

		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"billing"}})
		scripter, _ := e.userClient(api.UserRequest{Name: "sam", Role: api.RoleOperator, Scope: []string{"billing"}, Scripts: true})

		// A viewer reads but does not write.
		_, err = viewer.CreateJob(ctx, jobReq("v-job", "billing", "http"))
		wantStatus(t, "viewer creating a job", err, 403)
		must(viewer.ListJobs(ctx, api.JobFilter{}, api.ListOptions{}))(t)

		// An operator works inside its scope only.
		job := must(op.CreateJob(ctx, jobReq("bill", "billing", "http")))(t)
		_, err = op.CreateJob(ctx, jobReq("mail", "mail", "http"))
		wantStatus(t, "operator creating outside its scope", err, 403)
		other := must(admin.CreateJob(ctx, jobReq("mail", "mail", "http")))(t)
		_, err = op.RunJob(ctx, other.ID)
		wantStatus(t, "operator running a job outside its scope", err, 403)
		_, err = op.GetJob(ctx, other.ID)
		wantStatus(t, "operator reading a job outside its scope", err, 403)
		run := must(admin.RunJob(ctx, other.ID))(t)
		if xs := must(admin.ListExecutions(ctx, api.ExecutionFilter{}, api.ListOptions{}))(t).Items; len(xs) == 0 || xs[0].ID != run.ID {
			t.Fatalf("the admin's list lacks the run of the mail job: %+v", xs)
		}
		for _, j := range must(op.ListJobs(ctx, api.JobFilter{}, api.ListOptions{}))(t).Items {
			if j.App != "billing" {
				t.Fatalf("operator of billing lists job %+v", j)
			}
		}
		for _, x := range must(op.ListExecutions(ctx, api.ExecutionFilter{}, api.ListOptions{}))(t).Items {
			if x.JobID == other.ID {
				t.Fatalf("operator of billing lists execution %+v of the mail job", x)
			}
		}
		_, err = op.UpdateJob(ctx, job.ID, jobReq("bill", "mail", "http"))
		wantStatus(t, "operator moving a job out of its scope", err, 403)
		_, err = viewer.RunJob(ctx, job.ID)
		wantStatus(t, "viewer running a job", err, 403)

		// Script handlers need the scripts permission.
		_, err = op.CreateJob(ctx, jobReq("sh", "billing", "shell"))
		wantStatus(t, "operator creating a shell job without scripts", err, 403)
		sh := must(scripter.CreateJob(ctx, jobReq("sh", "billing", "shell")))(t)
		_, err = op.UpdateJob(ctx, sh.ID, jobReq("sh", "billing", "shell"))
		wantStatus(t, "operator editing a shell job without scripts", err, 403)

		// An update is audited with the job before and after, secrets redacted.
		upd := jobReq("bill", "billing", "http")
		upd.Description = "now with a description"
		upd.Data = map[string]any{"db_password": "hunter2-secret", "region": "eu"}
		must(op.UpdateJob(ctx, job.ID, upd))(t)
		page := must(admin.ListAudit(ctx, api.AuditFilter{Action: "job.update", Target: fmt.Sprint(job.ID)}))(t)
		if len(page.Items) != 1 {
			t.Fatalf("audit of the update: %+v, want one entry", page.Items)
		}
		a := page.Items[0]
		if a.Actor != "otto" || a.TargetKind != "job" || a.App != "billing" || a.Source == "" {
			t.Fatalf("audit entry: %+v", a)
		}
		if !strings.Contains(string(a.Before), `"description":""`) || !strings.Contains(string(a.After), `"description":"now with a description"`) {
			t.Fatalf("audit before %s / after %s: want the description's change", a.Before, a.After)
		}
		if strings.Contains(string(a.After), "hunter2") || !strings.Contains(string(a.After), `"db_password":"[redacted]"`) {
			t.Fatalf("audit after %s: the password is not redacted", a.After)
		}
		create := must(admin.ListAudit(ctx, api.AuditFilter{Action: "job.create", Actor: "otto"}))(t)
		if len(create.Items) != 1 || create.Items[0].Target != fmt.Sprint(job.ID) || create.Items[0].Before != nil || create.Items[0].After == nil {
			t.Fatalf("audit of the create: %+v", create.Items)
		}
		// Refused requests change nothing and log nothing.
		refused := must(admin.ListAudit(ctx, api.AuditFilter{Actor: "vera", TargetKind: "job"}))(t)
		if len(refused.Items) != 0 {
			t.Fatalf("refused viewer's audit: %+v", refused.Items)
		}

		// A failed login is audited, for a user that exists and one that does not.
		anon, err := api.NewClient(e.url, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = anon.Login(ctx, "vera", "not-her-password")
		wantStatus(t, "wrong password", err, 401)
		failed := must(admin.ListAudit(ctx, api.AuditFilter{Action: "auth.login_failed"}))(t)
		if len(failed.Items) != 1 || failed.Items[0].Target != "vera" || failed.Items[0].Source == "" {
			t.Fatalf("failed login audit: %+v", failed.Items)
		}

		// Viewers and operators do not read the audit log or manage users.
		_, err = op.ListAudit(ctx, api.AuditFilter{})
		wantStatus(t, "operator reading the audit log", err, 403)
		_, err = op.CreateUser(ctx, api.UserRequest{Name: "x", Password: strongPassword("x"), Role: "admin"})
		wantStatus(t, "operator creating a user", err, 403)
	})
}

// TestPasswordChangeEndsOtherSessions checks that changing a password ends the user's other
// sessions and keeps the one that changed it, and that a reset token works once.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		first, u := e.userClient(api.UserRequest{Name: "petra", Role: api.RoleViewer})
		second, err := api.NewClient(e.url, "")
		if err != nil {
			t.Fatal(err)
		}
		must(second.Login(ctx, "petra", strongPassword("petra")))(t)

		err = first.ChangePassword(ctx, api.PasswordRequest{CurrentPassword: strongPassword("petra"), NewPassword: "petra12345678"})
		wantStatus(t, "weak new password", err, 400)
		newPW := "Granite-Lantern-Wobble-52"
		if err := first.ChangePassword(ctx, api.PasswordRequest{CurrentPassword: strongPassword("petra"), NewPassword: newPW}); err != nil {
			t.Fatal(err)
		}
		must(first.Me(ctx))(t)
		_, err = second.Me(ctx)
		wantStatus(t, "the other session after a password change", err, 401)
		must(second.Login(ctx, "petra", newPW))(t)

		// A reset ends every session; its token sets a password once.
		reset := must(e.client().ResetPassword(ctx, u.ID))(t)
		_, err = first.Me(ctx)
		wantStatus(t, "a session after a reset", err, 401)
		anon, _ := api.NewClient(e.url, "")
		if err := anon.RedeemReset(ctx, api.ResetRequest{Token: reset.Token, NewPassword: "Copper-Meadow-Trellis-17"}); err != nil {
			t.Fatal(err)
		}
		err = anon.RedeemReset(ctx, api.ResetRequest{Token: reset.Token, NewPassword: "Copper-Meadow-Trellis-18"})
		wantStatus(t, "a used reset token", err, 400)
		must(anon.Login(ctx, "petra", "Copper-Meadow-Trellis-17"))(t)

		// A disabled user cannot log in, and its sessions end.
		disabled := true
		must(e.client().UpdateUser(ctx, u.ID, api.UserUpdate{Disabled: &disabled}))(t)
		_, err = anon.Me(ctx)
		wantStatus(t, "a disabled user's session", err, 401)
		_, err = anon.Login(ctx, "petra", "Copper-Meadow-Trellis-17")
		wantStatus(t, "a disabled user's login", err, 401)
	})
}

// TestPolicyWalksRoutes walks the route table: each role is refused exactly the routes above
// it, and no route that changes something is open to a viewer.
func TestPolicyWalksRoutes(t *testing.T) {
	e := newEnv(t, "sqlite")
	tokens := map[store.Role]string{store.RoleAdmin: e.token}
	for _, role := range []store.Role{store.RoleOperator, store.RoleViewer} {
		c, _ := e.userClient(api.UserRequest{Name: "walk-" + string(role), Role: string(role)})
		tok := must(c.CreateToken(context.Background(), api.TokenRequest{Name: "walk"}))(t)
		tokens[role] = tok.Token
	}
	for _, rt := range e.srv.routeTable() {
		selfOrAuth := strings.Contains(rt.path, "/auth/") || strings.Contains(rt.path, "/tokens") ||
			strings.Contains(rt.path, "/executor/") || rt.path == "/healthz" || rt.path == "/readyz" ||
			strings.HasSuffix(rt.path, "/openapi.json")
		if !selfOrAuth && rt.method != "GET" && rt.pol.act < ActOperate {
			t.Errorf("%s %s changes something but needs only %s", rt.method, rt.path, rt.pol.act)
		}
		if !selfOrAuth && rt.pol.act < ActRead {
			t.Errorf("%s %s needs only %s", rt.method, rt.path, rt.pol.act)
		}
		if rt.pol.act == ActPublic || rt.path == v1Logout {
			continue
		}
		// Ids that do not exist: an allowed request reaches its handler and changes nothing.
		path := strings.NewReplacer("{id}", "987654", "{name}", "no-such-thing").Replace(rt.path)
		for role, tok := range tokens {
			resp := e.raw(rt.method, path, tok, nil, map[string]string{})
			allowed := roleRank(role) >= rt.pol.act
			if denied := resp.StatusCode == http.StatusForbidden; denied == allowed {
				t.Errorf("%s %s as %s: %d, want allowed=%v (needs %s)", rt.method, path, role, resp.StatusCode, allowed, rt.pol.act)
			}
		}
	}
}

const v1Logout = "/api/v1/auth/logout"

// TestTokenNarrowing: a token's role and scope are at most its user's, it acts with the lesser
// of the two, its last use is recorded, and a non-admin sees only their own tokens.
func TestTokenNarrowing(t *testing.T) {
	e := newEnv(t, "sqlite")
	ctx := context.Background()
	op, opUser := e.userClient(api.UserRequest{Name: "olga", Role: api.RoleOperator, Scope: []string{"billing"}})
	_, err := op.CreateToken(ctx, api.TokenRequest{Name: "up", Role: api.RoleAdmin})
	if ae := wantStatus(t, "token above the user's role", err, 400); ae.Field != "role" {
		t.Fatalf("field %q, want role", ae.Field)
	}
	_, err = op.CreateToken(ctx, api.TokenRequest{Name: "wide", Scope: []string{"mail"}})
	wantStatus(t, "token outside the user's scope", err, 400)
	_, err = op.CreateToken(ctx, api.TokenRequest{Name: "sh", Scripts: true})
	wantStatus(t, "token with scripts the user lacks", err, 400)
	opTok := must(op.CreateToken(ctx, api.TokenRequest{Name: "ci"}))(t)
	if strings.Join(opTok.Scope, ",") != "billing" {
		t.Fatalf("a scoped user's token has scope %v, want the user's", opTok.Scope)
	}

	vt := must(e.client().CreateToken(ctx, api.TokenRequest{Name: "read-only", Role: api.RoleViewer}))(t)
	viewer, err := api.NewClient(e.url, vt.Token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = viewer.CreateJob(ctx, jobReq("j", "billing", "http"))
	wantStatus(t, "an admin's viewer token creating a job", err, 403)
	me := must(viewer.Me(ctx))(t)
	if me.Role != api.RoleViewer || me.Via != "token" {
		t.Fatalf("me through a viewer token: %+v", me)
	}

	all := must(e.client().ListTokens(ctx, api.ListOptions{}))(t)
	var used api.Token
	for _, tk := range all.Items {
		if tk.ID == vt.ID {
			used = tk
		}
	}
	if used.Role != api.RoleViewer || used.LastUsedAt == 0 {
		t.Fatalf("the viewer token as listed: %+v; want its role and last use", used)
	}
	own := must(op.ListTokens(ctx, api.ListOptions{}))(t)
	if len(own.Items) != 1 || own.Items[0].UserID != opUser.ID {
		t.Fatalf("an operator's token list: %+v; want only their own", own.Items)
	}
	err = op.DeleteToken(ctx, vt.ID)
	wantStatus(t, "deleting another user's token", err, 404)
}

// TestTokenScripts: an admin's token narrowed to operator makes script jobs only when given
// the scripts permission.
func TestTokenScripts(t *testing.T) {
	e := newEnv(t, "sqlite")
	ctx := context.Background()
	for _, scripts := range []bool{false, true} {
		tok := must(e.client().CreateToken(ctx, api.TokenRequest{Name: fmt.Sprint("op-", scripts), Role: api.RoleOperator, Scripts: scripts}))(t)
		c, err := api.NewClient(e.url, tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateJob(ctx, jobReq(fmt.Sprint("sh-", scripts), "billing", "shell"))
		if scripts && err != nil {
			t.Fatalf("operator token with scripts: %v", err)
		}
		if !scripts {
			wantStatus(t, "operator token without scripts", err, 403)
		}
	}
}

// TestScopedListsAreFullPages checks that a scoped user's lists are cut to its apps before
// paging: a page of one is its app's newest item, not an empty page over another app's, and
// a lookup by name does not find another app's job.
func TestScopedListsAreFullPages(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"billing"}})
		mail := must(admin.CreateJob(ctx, jobReq("mail", "mail", "http")))(t)
		bill := must(admin.CreateJob(ctx, jobReq("bill", "billing", "http")))(t)
		must(admin.CreateJob(ctx, jobReq("mail-2", "mail", "http")))(t)
		billRun := must(admin.RunJob(ctx, bill.ID))(t)
		must(admin.RunJob(ctx, mail.ID))(t)
		must(admin.RunJob(ctx, mail.ID))(t)

		jobs := must(op.ListJobs(ctx, api.JobFilter{}, api.ListOptions{Limit: 1}))(t)
		if len(jobs.Items) != 1 || jobs.Items[0].ID != bill.ID || jobs.Next != nil {
			t.Fatalf("operator of billing, jobs by one: %+v, want the bill job alone", jobs)
		}
		xs := must(op.ListExecutions(ctx, api.ExecutionFilter{}, api.ListOptions{Limit: 1}))(t)
		if len(xs.Items) != 1 || xs.Items[0].ID != billRun.ID || xs.Next != nil {
			t.Fatalf("operator of billing, executions by one: %+v, want the bill job's run alone", xs)
		}
		_, err := op.FindJob(ctx, "", "mail")
		wantStatus(t, "operator looking up another app's job by name", err, 404)
	})
}
