package server

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sundial-scheduler/sundial/api"
)

// The findings of issue 13 ("executors are trusted too much"), each reproduced over real
// sockets: before the fix, every refused report below was taken.

// trustEnv runs one remote job of app billing on a fake executor registered as instance i1
// and returns the running execution's id.
func trustEnv(t *testing.T, dialect string) (*env, int64) {
	e, id, _ := trustEnvWith(t, dialect)
	return e, id
}

// trustEnvWith is trustEnv that also returns the fake executor.
func trustEnvWith(t *testing.T, dialect string) (*env, int64, *fakeExecutor) {
	e := newExecutorEnv(t, dialect, time.Second)
	fe := newFakeExecutor(t)
	e.executorAs(sender{"billing", inst("i1")}, "register", map[string]any{"app": "billing", "address": fe.url,
		"instance": inst("i1"), "handlers": []string{"report"}}, 200, nil)
	job := e.remoteJob("billing", "first", nil)
	e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
	run := fe.nextRun()
	if run.Instance != inst("i1") {
		t.Fatalf("run sent for instance %q, want i1", run.Instance)
	}
	eventually(t, "the dispatch to be recorded", func() bool { return e.execution(run.ExecutionID).ExecutorAddress == fe.url })
	return e, run.ExecutionID, fe
}

func result(id int64, startedAt, finishedAt int64) map[string]any {
	return map[string]any{"results": []map[string]any{{"execution_id": id, "state": "succeeded", "code": 200,
		"message": "forged?", "started_at": startedAt, "finished_at": finishedAt}}}
}

func (e *env) rejected(reason string) float64 {
	return testutil.ToFloat64(e.srv.rejected.WithLabelValues(reason))
}

// TestForgedResults: a result (or output) about a live run from another app, or from another
// instance of the run's app, is refused, counted, and leaves the run running.
func TestForgedResults(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		now := time.Now().UnixMilli()
		e.executorAs(sender{"payroll", inst("i1")}, "results", result(id, now, now), 403, nil)
		e.executorAs(sender{"billing", inst("i2")}, "results", result(id, now, now), 409, nil)
		e.executorAs(sender{"billing", inst("i2")}, "logs", map[string]any{"execution_id": id,
			"lines": []map[string]any{{"line": 1, "at": now, "message": "planted"}}}, 409, nil)
		if x := e.execution(id); x.State != "running" {
			t.Fatalf("a forged result changed the run: %+v", x)
		}
		if a, i := e.rejected(rejectWrongApp), e.rejected(rejectWrongInstance); a != 1 || i != 2 {
			t.Fatalf("rejected wrong_app %v, wrong_instance %v; want 1 and 2", a, i)
		}
		e.executorAs(sender{"billing", inst("i1")}, "results", result(id, now, now), 200, nil)
		if x := e.execution(id); x.State != "succeeded" {
			t.Fatalf("the real instance's result was not taken: %+v", x)
		}
	})
}

// TestPlantedOutput: output for an execution id not created yet, or for a run that ended, is
// refused; nothing is stored for either.
func TestPlantedOutput(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		billing := sender{"billing", inst("i1")}
		line := func(id int64, msg string) map[string]any {
			return map[string]any{"execution_id": id, "lines": []map[string]any{{"line": 1, "at": 1, "message": msg}}}
		}
		e.executorAs(billing, "logs", line(id+100, "planted ahead"), 409, nil)
		now := time.Now().UnixMilli()
		e.executorAs(billing, "results", result(id, now, now), 200, nil)
		e.executorAs(billing, "logs", line(id, "appended after the end"), 409, nil)
		if n := e.rejected(rejectNotLive); n != 2 {
			t.Fatalf("rejected not_live = %v, want 2", n)
		}
		// Read from the store: the future id has no execution for the API to show yet, and
		// its planted lines would have become its output when it came.
		for _, x := range []int64{id, id + 100} {
			lines, err := e.srv.store.ExecutionLogList(context.Background(), x, 0, 10)
			if err != nil || len(lines) != 0 {
				t.Fatalf("execution %d has output %v (err %v)", x, lines, err)
			}
		}
	})
}

// TestResultTimesAreTheServers: an executor's finished_at (year -1199 in the probe) is
// ignored, and started_at is kept within [fired_at, now].
func TestResultTimesAreTheServers(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		before := time.Now().UnixMilli()
		const year1199BC = -99_999_999_999_999
		e.executorAs(sender{"billing", inst("i1")}, "results", result(id, year1199BC, year1199BC), 200, nil)
		after := time.Now().UnixMilli()
		x := e.execution(id)
		fin, started, fired := x.FinishedAt.Time().UnixMilli(), x.StartedAt.Time().UnixMilli(), x.FiredAt.Time().UnixMilli()
		if fin < before || fin > after {
			t.Fatalf("finished_at %d, want the server's time in [%d, %d]", fin, before, after)
		}
		if started != fired {
			t.Fatalf("started_at %d, want it clamped to fired_at %d", started, fired)
		}
	})
}

// TestAppCredentials: an admin makes an app's executor credential (shown once); an executor
// presenting it may register into and report about its app only, and a rotated-out one is
// refused.
func TestAppCredentials(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		var billing, payroll api.AppCredential
		e.call("POST", "/api/v1/apps/billing/credentials", nil, 201, &billing)
		e.call("POST", "/api/v1/apps/payroll/credentials", nil, 201, &payroll)
		e.call("POST", "/api/v1/apps/billing/credentials", nil, 409, nil)
		if !strings.HasPrefix(billing.Secret, credentialPrefix) || billing.App != "billing" {
			t.Fatalf("credential %+v", billing)
		}
		var list []api.AppCredential
		e.call("GET", "/api/v1/apps/billing/credentials", nil, 200, &list)
		if len(list) != 1 || list[0].Secret != "" || list[0].App != "billing" {
			t.Fatalf("listed %+v: want billing's, without its secret", list)
		}

		// Cross-app registration: payroll's credential cannot join billing.
		reg := func(app string) map[string]any {
			return map[string]any{"app": app, "address": "http://127.0.0.1:1", "instance": inst("evil"), "handlers": []string{"report"}}
		}
		e.executorWith(payroll.Secret, sender{"billing", inst("evil")}, "register", reg("billing"), 403, nil)
		e.executorWith(payroll.Secret, sender{}, "register", reg("billing"), 403, nil)
		var live api.Page[api.Executor]
		e.call("GET", "/api/v1/executors", nil, 200, &live)
		for _, x := range live.Items {
			if x.Address == "http://127.0.0.1:1" {
				t.Fatalf("payroll's credential registered into billing: %+v", x)
			}
		}
		// Forged result with another app's credential, whatever app it names.
		now := time.Now().UnixMilli()
		e.executorWith(payroll.Secret, sender{"payroll", inst("i1")}, "results", result(id, now, now), 403, nil)
		e.executorWith(payroll.Secret, sender{}, "results", result(id, now, now), 403, nil)
		if x := e.execution(id); x.State != "running" {
			t.Fatalf("another app's credential finished the run: %+v", x)
		}

		// Rotation: the old secret stops working at once, the new one works.
		var rotated api.AppCredential
		e.call("POST", "/api/v1/apps/billing/credentials/rotate", nil, 200, &rotated)
		if rotated.Secret == billing.Secret || rotated.RotatedAt.IsZero() {
			t.Fatalf("rotated %+v", rotated)
		}
		e.executorWith(billing.Secret, sender{"billing", inst("i1")}, "results", result(id, now, now), 401, nil)
		e.executorWith(rotated.Secret, sender{"", inst("i1")}, "results", result(id, now, now), 200, nil)
		if x := e.execution(id); x.State != "succeeded" {
			t.Fatalf("the app's own credential did not finish the run: %+v", x)
		}
		e.call("POST", "/api/v1/apps/nobody/credentials/rotate", nil, 404, nil)

		// Revocation: the secret stops working at once; a second revoke finds nothing.
		e.call("DELETE", "/api/v1/apps/billing/credentials", nil, 204, nil)
		e.executorWith(rotated.Secret, sender{"billing", inst("i1")}, "register", reg("billing"), 401, nil)
		e.call("DELETE", "/api/v1/apps/billing/credentials", nil, 404, nil)
		e.call("GET", "/api/v1/apps/billing/credentials", nil, 200, &list)
		if len(list) != 0 {
			t.Fatalf("listed after the revoke: %+v", list)
		}
		// Each change of a credential is audited, without its secret.
		var audit api.Page[api.AuditEntry]
		e.call("GET", "/api/v1/audit?target_kind=app&target=billing", nil, 200, &audit)
		var actions []string
		for _, a := range audit.Items {
			actions = append(actions, a.Action)
			if strings.Contains(string(a.Before)+string(a.After), "sde_") {
				t.Fatalf("audit entry %+v holds a secret", a)
			}
		}
		if got := strings.Join(actions, " "); got != "credential.revoke credential.rotate credential.create" {
			t.Fatalf("audit of billing's credential: %q", got)
		}
	})
}

// TestAppWritesNeedAdmin: apps and their executor credentials are an admin's. A viewer or an
// operator (even one scoped to the app) is refused every change, and a refused request
// changes nothing.
func TestAppWritesNeedAdmin(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		must(admin.PutApp(ctx, "billing", api.AppRequest{Title: "Billing", AddressMode: "auto"}))(t)
		cred := must(admin.CreateAppCredential(ctx, "billing"))(t)
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		op, _ := e.userClient(api.UserRequest{Name: "otto", Role: api.RoleOperator, Scope: []string{"billing"}})
		// An operator of every app too: the apps are not an operator's, whatever its scope.
		all, _ := e.userClient(api.UserRequest{Name: "oscar", Role: api.RoleOperator, Scope: []string{"*"}})
		for name, c := range map[string]*api.Client{"viewer": viewer, "operator": op, "unscoped operator": all} {
			_, err := c.PutApp(ctx, "billing", api.AppRequest{Title: "Mine", AddressMode: "auto"})
			wantStatus(t, name+" changing an app", err, 403)
			_, err = c.PutApp(ctx, "new", api.AppRequest{AddressMode: "auto"})
			wantStatus(t, name+" creating an app", err, 403)
			wantStatus(t, name+" deleting an app", c.DeleteApp(ctx, "billing"), 403)
			_, err = c.CreateAppCredential(ctx, "new")
			wantStatus(t, name+" issuing a credential", err, 403)
			_, err = c.RotateAppCredential(ctx, "billing")
			wantStatus(t, name+" rotating a credential", err, 403)
			wantStatus(t, name+" revoking a credential", c.RevokeAppCredential(ctx, "billing"), 403)
			_, err = c.ListAppCredentials(ctx, "billing")
			wantStatus(t, name+" listing credentials", err, 403)
			// Reading the app is every role's.
			if a := must(c.GetApp(ctx, "billing"))(t); a.Title != "Billing" {
				t.Fatalf("%s reads %+v", name, a)
			}
		}
		if a := must(admin.GetApp(ctx, "billing"))(t); a.Title != "Billing" {
			t.Fatalf("the app after refused changes: %+v", a)
		}
		if _, err := admin.GetApp(ctx, "new"); !api.IsNotFound(err) {
			t.Fatalf("an app a refused request would have made: %v", err)
		}
		creds := must(admin.ListAppCredentials(ctx, "billing"))(t)
		if len(creds) != 1 || creds[0].CreatedAt != cred.CreatedAt || !creds[0].RotatedAt.IsZero() {
			t.Fatalf("the credential after refused changes: %+v", creds)
		}
	})
}

// TestExecutorNetworks: with --executor-networks set, a manual address outside them, or named
// by a host name, is refused: the server would send runs and their parameters there. So is a
// registered one (issue 20, item 1: registrations were taken from anywhere).
func TestExecutorNetworks(t *testing.T) {
	e := newEnvWith(t, "sqlite", func(c *Config) {
		c.ExecutorNetworks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		c.ExecutorToken = execToken
	})
	register := func(addr string, want int) {
		t.Helper()
		e.executorAs(sender{"billing", inst("net")}, "register", map[string]any{"app": "billing", "address": addr,
			"instance": inst("net"), "handlers": []string{"report"}}, want, nil)
	}
	register("http://203.0.113.7:9999", 400)
	register("http://attacker.example:9999", 400)
	register("http://10.1.2.3:9999", 200)
	put := func(addr string, want int) {
		t.Helper()
		e.call("PUT", "/api/v1/apps/legacy", map[string]any{"address_mode": "manual", "addresses": []string{addr}}, want, nil)
	}
	put("http://10.1.2.3:9999", 200)
	put("http://203.0.113.7:9999", 400)
	put("http://attacker.example:9999", 400)
}

// TestDeleteAppRevokesCredentials: deleting an app revokes its executor credential, so its
// executor can no longer register the app back; the app's jobs stay, naming it, as they did
// before (an admin who makes the app again issues a new credential).
func TestDeleteAppRevokesCredentials(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Minute)
		var cred api.AppCredential
		e.call("POST", "/api/v1/apps/billing/credentials", nil, 201, &cred)
		i1 := inst("billing-1")
		reg := map[string]any{"app": "billing", "address": "http://127.0.0.1:1", "instance": i1, "handlers": []string{"report"}}
		e.executorWith(cred.Secret, sender{"billing", i1}, "register", reg, 200, nil)
		job := e.remoteJob("billing", "round_robin", nil)
		e.call("PUT", "/api/v1/apps/billing", map[string]any{"title": "Billing"}, 200, nil)

		e.call("DELETE", "/api/v1/apps/billing", nil, 204, nil)
		e.executorWith(cred.Secret, sender{"billing", i1}, "register", reg, 401, nil)
		e.call("GET", "/api/v1/apps/billing", nil, 404, nil)
		var creds []api.AppCredential
		e.call("GET", "/api/v1/apps/billing/credentials", nil, 200, &creds)
		if len(creds) != 0 {
			t.Fatalf("credentials of the deleted app: %+v", creds)
		}
		var j api.Job
		e.call("GET", fmt.Sprintf("/api/v1/jobs/%d", job), nil, 200, &j)
		if j.App != "billing" {
			t.Fatalf("the deleted app's job: %+v, want it kept naming billing", j)
		}
		var again api.AppCredential
		e.call("POST", "/api/v1/apps/billing/credentials", nil, 201, &again)
		i2 := inst("billing-2")
		reg["instance"] = i2
		e.executorWith(again.Secret, sender{"billing", i2}, "register", reg, 200, nil)
	})
}
