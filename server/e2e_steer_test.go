package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// The attacks of issue 20 (items 1 and 2), as an attacker holding app alpha's executor
// credential and a viewer's read of the executor list would make them, against real
// executors (the SDK) over real sockets.

// ledgerExecutor starts a real executor of app whose "shell" handler writes the run's
// params to a file before it runs (a ledger outside the database: if the file exists, the
// script ran) and, with hold, waits for hold to close.
func ledgerExecutor(t *testing.T, e *env, app, credential string, hold chan struct{}) (*executor.Executor, string) {
	t.Helper()
	ledger := filepath.Join(t.TempDir(), app+"-ledger")
	ex, err := executor.New(executor.Config{Server: e.url, Token: credential, App: app, Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("shell", func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		if err := os.WriteFile(ledger, []byte(run.Params), 0o600); err != nil {
			return err
		}
		executor.Logger(ctx).Info("the real line")
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex, ledger
}

func credential(e *env, app string) string {
	e.t.Helper()
	var c api.AppCredential
	e.call("POST", "/api/v1/apps/"+app+"/credentials", nil, 201, &c)
	return c.Secret
}

// shellJob stores alpha's shell job, whose script would write "alpha's script" to the ledger
// of any executor that ran it, and returns its id.
func (e *env) shellJob(app string) int64 {
	return e.remoteJob(app, "first", func(j *store.Job) { j.Handler, j.Params = "shell", app+"'s script" })
}

// TestAppCredentialCannotSteerAnotherAppsExecutor (issue 20, item 1): with alpha's
// credential, a registration of beta's executor address is refused (409, counted, audited);
// and when the server is pointed there anyway (a registry row written before beta's executor
// came, or an admin's manual address), beta's executor refuses every call signed for alpha:
// alpha's shell job fails saying why, and beta's ledger stays empty. Before the fix the
// registration was taken, beta's executor answered with its own instance, the server re-sent
// the run for it, and beta's executor ran alpha's script.
func TestAppCredentialCannotSteerAnotherAppsExecutor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		alphaCred, betaCred := credential(e, "alpha"), credential(e, "beta")
		beta, betaLedger := ledgerExecutor(t, e, "beta", betaCred, nil)

		e.executorWith(alphaCred, sender{"alpha", inst("aaaa")}, "register", map[string]any{"app": "alpha",
			"address": beta.Address(), "instance": inst("aaaa"), "handlers": []string{"shell"}}, http.StatusConflict, nil)
		if n := e.rejected(rejectAddressTaken); n != 1 {
			t.Fatalf("rejected address_taken = %v, want 1", n)
		}
		var audit api.Page[api.AuditEntry]
		e.call("GET", "/api/v1/audit?action=executor.register_refused", nil, 200, &audit)
		if len(audit.Items) != 1 || audit.Items[0].Target != beta.Address() || !strings.Contains(audit.Items[0].Actor, "alpha") {
			t.Fatalf("audit entries %+v: want one refused registration of %s by alpha", audit.Items, beta.Address())
		}

		// The registry is told anyway (as if alpha had registered the address first, between
		// two beats of beta's executor), for an instance alpha made up: the run is signed for
		// alpha and that instance.
		ctx := context.Background()
		eventually(t, "alpha's row at beta's address", func() bool {
			if _, err := e.st.RegistryLeave(ctx, "beta", beta.Address()); err != nil {
				t.Fatal(err)
			}
			err := e.st.RegistryBeat(ctx, "alpha", beta.Address(), inst("aaaa"), "", []string{"shell"})
			if err != nil && !errors.Is(err, store.ErrAlreadyExists) {
				t.Fatal(err)
			}
			return err == nil
		})
		job := e.shellJob("alpha")
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		eventually(t, "alpha's run to fail", func() bool {
			xs := e.jobExecutions(job)
			return len(xs) == 1 && xs[0].State == "failed"
		})
		if x := e.jobExecutions(job)[0]; !strings.Contains(x.TriggerMsg+x.HandleMsg, wire.MisdirectedApp) {
			t.Fatalf("alpha's run on beta's executor: %+v, want it failed as %s", x, wire.MisdirectedApp)
		}
		if err := e.st.RegistryBeat(ctx, "alpha", beta.Address(), inst("aaaa"), "", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.RegistryLeave(ctx, "alpha", beta.Address()); err != nil {
			t.Fatal(err)
		}

		// An admin points alpha at beta's executor by hand: no instance is learned there.
		e.call("PUT", "/api/v1/apps/alpha", map[string]any{"address_mode": "manual", "addresses": []string{beta.Address()}}, 200, nil)
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		eventually(t, "alpha's second run to fail", func() bool {
			xs := e.jobExecutions(job)
			return len(xs) == 2 && xs[1].State == "failed"
		})
		if x := e.jobExecutions(job)[1]; !strings.Contains(x.TriggerMsg+x.HandleMsg, wire.MisdirectedApp) {
			t.Fatalf("alpha's run at a manual address of beta's executor: %+v, want it failed as %s", x, wire.MisdirectedApp)
		}
		if b, err := os.ReadFile(betaLedger); err == nil {
			t.Fatalf("beta's executor ran %q", b)
		}

		// Beta's own run still runs there, once its executor's beat took the address back:
		// the ledger works.
		eventually(t, "beta's executor registered again", func() bool {
			at, err := e.st.RegistryAt(ctx, beta.Address(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return len(at) == 1 && at[0].App == "beta"
		})
		bjob := e.shellJob("beta")
		e.call("POST", "/api/v1/jobs/"+itoa(bjob)+"/run", nil, 202, nil)
		eventually(t, "beta's run to succeed", func() bool {
			xs := e.jobExecutions(bjob)
			return len(xs) == 1 && xs[0].State == "succeeded"
		})
		if b, err := os.ReadFile(betaLedger); err != nil || string(b) != "beta's script" {
			t.Fatalf("beta's ledger %q (%v), want beta's script", b, err)
		}
	})
}

// TestForgedResultWithVisibleInstance (issue 20, item 2): the instance id of a live run is
// read from the executor list; with alpha's credential and that id, a forged result and
// planted output are refused (the sender cannot prove the instance: it lacks its key), and
// the real executor's result and lines are the ones kept. Before the fix the forged result
// marked the run succeeded and the real one was dropped.
func TestForgedResultWithVisibleInstance(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		alphaCred := credential(e, "alpha")
		hold := make(chan struct{})
		alpha, _ := ledgerExecutor(t, e, "alpha", alphaCred, hold)
		var released bool
		release := func() {
			if !released {
				released = true
				close(hold)
			}
		}
		t.Cleanup(release) // before the executor's Stop, which waits for the run
		job := e.shellJob("alpha")
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		var id int64
		eventually(t, "the run to be handed to alpha's executor", func() bool {
			xs := e.jobExecutions(job)
			if len(xs) == 1 && xs[0].ExecutorAddress != "" {
				id = xs[0].ID
				return true
			}
			return false
		})
		var list api.Page[api.Executor]
		e.call("GET", "/api/v1/executors?app=alpha", nil, 200, &list)
		if len(list.Items) != 1 || list.Items[0].Instance != alpha.Instance() {
			t.Fatalf("executor list %+v", list.Items)
		}
		seen := list.Items[0].Instance

		now := time.Now().UnixMilli()
		forged := result(id, now, now)
		planted := map[string]any{"execution_id": id, "lines": []map[string]any{{"line": 1, "at": now, "message": "planted"}}}
		for _, path := range []string{"results", "logs"} {
			body := forged
			if path == "logs" {
				body = planted
			}
			// The visible id alone, and the id proven by a key that is not the instance's.
			e.executorWith(alphaCred, sender{"alpha", seen}, path, body, http.StatusUnauthorized, nil)
			e.executorProven(alphaCred, sender{"alpha", seen}, instanceKey(inst("attacker")), path, body, http.StatusUnauthorized, nil)
		}
		if n := e.rejected(rejectNoProof); n != 4 {
			t.Fatalf("rejected no_proof = %v, want 4", n)
		}
		if x := e.execution(id); x.State != "running" {
			t.Fatalf("a forged result changed the run: %+v", x)
		}

		release()
		eventually(t, "the real result", func() bool { return e.execution(id).State == "succeeded" })
		if x := e.execution(id); x.HandleMsg == "forged?" {
			t.Fatalf("the run holds the forged result: %+v", x)
		}
		lines, err := e.st.ExecutionLogList(context.Background(), id, 0, 10)
		if err != nil || len(lines) == 0 {
			t.Fatalf("output %v, %v", lines, err)
		}
		for _, l := range lines {
			if strings.Contains(l.Message, "planted") {
				t.Fatalf("planted output stored: %+v", lines)
			}
		}
		if !strings.Contains(lines[0].Message, "the real line") {
			t.Fatalf("output %+v, want the real executor's line", lines)
		}
	})
}

// TestRegisterAddressRace: two apps' executors registering one new address at once (issue
// 20's address squatting, as a race): the database's key on the address lets exactly one win;
// the other is 409 naming the field, counted and audited. The winner's next beat, and a new
// instance of the same app there (a restart), are taken.
func TestRegisterAddressRace(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Minute)
		creds := map[string]string{"alpha": credential(e, "alpha"), "beta": credential(e, "beta")}
		const addr = "http://127.0.0.1:9"
		body := func(app, instance string) map[string]any {
			return map[string]any{"app": app, "address": addr, "instance": inst(instance), "handlers": []string{"h"}}
		}
		apps := []string{"alpha", "beta"}
		answers := make([]*http.Response, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, app := range apps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				from := sender{app, inst(app + "-1")}
				answers[i], errs[i] = e.executorSend(creds[app], from, instanceKey(from.instance), "register", body(app, app+"-1"))
			}()
		}
		close(start)
		wg.Wait()
		won := -1
		for i, resp := range answers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			defer resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				if won >= 0 {
					t.Fatalf("both apps registered %s", addr)
				}
				won = i
			case http.StatusConflict:
				var b api.ErrorBody
				mustDecode(t, resp, &b)
				if b.Error.Field != "address" || !strings.Contains(b.Error.Message, addr) {
					t.Fatalf("the loser's answer: %+v, want 409 naming the address", b.Error)
				}
			default:
				t.Fatalf("register: status %d", resp.StatusCode)
			}
		}
		if won < 0 {
			t.Fatal("neither app registered the address")
		}
		if n := e.rejected(rejectAddressTaken); n != 1 {
			t.Fatalf("rejected address_taken = %v, want 1", n)
		}
		var audit api.Page[api.AuditEntry]
		e.call("GET", "/api/v1/audit?action=executor.register_refused", nil, 200, &audit)
		if len(audit.Items) != 1 || audit.Items[0].Target != addr || !strings.Contains(audit.Items[0].Actor, apps[1-won]) {
			t.Fatalf("audit entries %+v: want one refused registration by %s", audit.Items, apps[1-won])
		}
		winner := apps[won]
		e.executorWith(creds[winner], sender{winner, inst(winner + "-1")}, "register", body(winner, winner+"-1"), 200, nil)
		e.executorWith(creds[winner], sender{winner, inst(winner + "-2")}, "register", body(winner, winner+"-2"), 200, nil)
		loser := apps[1-won]
		e.executorWith(creds[loser], sender{loser, inst(loser + "-1")}, "register", body(loser, loser+"-1"), 409, nil)
	})
}
