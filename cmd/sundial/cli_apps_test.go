package main

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
)

// cliExecutorToken is the executor token of the test servers.
const cliExecutorToken = "cli-test-executor-token"

func TestCLIApps(t *testing.T) {
	s := startAPIServer(t)

	created := mustJSON[api.App](t, s, "app", "create", "billing", "--title", "Billing batch")
	if created.Name != "billing" || created.Title != "Billing batch" || created.AddressMode != "auto" {
		t.Fatalf("app create: %+v", created)
	}
	if code, _, errOut := s.cli(t, "app", "create", "billing"); code != 1 || !strings.Contains(errOut, "exists already") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("creating an existing app: exit %d, %q: want 1 and one line", code, errOut)
	}
	if code, _, errOut := s.cli(t, "app", "create", "legacy", "--mode", "manual"); code != 2 || !strings.Contains(errOut, "addresses") {
		t.Errorf("manual app without addresses: exit %d, %q: want 2 naming the field", code, errOut)
	}
	mustJSON[api.App](t, s, "app", "create", "legacy", "--mode", "manual", "--address", "http://10.0.0.5:9999,http://10.0.0.6:9999")

	upd := mustJSON[api.App](t, s, "app", "update", "billing", "--title", "Billing")
	if upd.Title != "Billing" || upd.AddressMode != "auto" {
		t.Fatalf("app update --title: %+v", upd)
	}
	upd = mustJSON[api.App](t, s, "app", "update", "legacy", "--mode", "auto", "--address", "")
	if upd.AddressMode != "auto" || len(upd.Addresses) != 0 {
		t.Fatalf("app update to auto: %+v", upd)
	}

	list := s.mustCLI(t, "app", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(list, "Billing") || !strings.Contains(list, "legacy") {
		t.Errorf("app list table:\n%s", list)
	}
	if apps := mustJSON[api.Page[api.App]](t, s, "app", "list"); len(apps.Items) != 2 {
		t.Errorf("app list -o json: %+v", apps)
	}

	// get shows the executors online.
	ex := startCLIExecutor(t, s, "billing")
	if got := s.mustCLI(t, "app", "get", "billing"); !strings.Contains(got, "Billing") || !strings.Contains(got, ex.Address()) {
		t.Errorf("app get with an executor online:\n%s", got)
	}

	s.mustCLI(t, "app", "delete", "legacy")
	if code, _, errOut := s.cli(t, "app", "get", "legacy"); code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("app get after delete: exit %d, %q: want 1 and one line", code, errOut)
	}
}

// startCLIExecutor starts an SDK executor of app whose handler "hold" runs until killed.
func startCLIExecutor(t *testing.T, s *apiServer, app string) *executor.Executor {
	t.Helper()
	ex, err := executor.New(executor.Config{Server: s.url, Token: cliExecutorToken, App: app, Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("hold", func(ctx context.Context) error {
		executor.Logger(ctx).Info("holding")
		<-ctx.Done()
		return ctx.Err()
	})
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that failed with a run held would otherwise wait for it for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ex.Stop(ctx)
	})
	return ex
}

func TestCLIExecKillRetry(t *testing.T) {
	s := startAPIServer(t)
	ex := startCLIExecutor(t, s, "pool")
	job := mustJSON[api.Job](t, s, "job", "create", "held", "--app", "pool", "--handler", "hold", "--once")
	id := strconv.FormatInt(job.ID, 10)
	var run api.Execution
	eventually(t, "the run to reach the executor", func() bool {
		xs := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", id)
		if len(xs.Items) == 1 {
			run = xs.Items[0]
		}
		return run.State == "running" && run.ExecutorAddress == ex.Address()
	})
	runID := strconv.FormatInt(run.ID, 10)
	if got := s.mustCLI(t, "exec", "get", runID); !strings.Contains(got, ex.Address()) {
		t.Errorf("exec get names no executor:\n%s", got)
	}

	out := s.mustCLI(t, "exec", "kill", runID)
	if !strings.Contains(out, "Killed execution "+runID+": canceled") {
		t.Fatalf("exec kill: %q", out)
	}
	if code, _, errOut := s.cli(t, "exec", "kill", runID); code != 1 || !strings.Contains(errOut, "ended already") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("killing an ended execution: exit %d, %q", code, errOut)
	}
	if code, _, errOut := s.cli(t, "exec", "kill", "x"); code != 2 || !strings.Contains(errOut, "execution id") {
		t.Errorf("kill with a bad id: exit %d, %q", code, errOut)
	}

	retry := mustJSON[api.Execution](t, s, "exec", "retry", runID)
	if retry.ID == run.ID || retry.Attempt != run.Attempt+1 || retry.JobID != job.ID || retry.Cause != "retry" {
		t.Fatalf("exec retry: %+v of %+v", retry, run)
	}
	eventually(t, "the retry to run on the executor", func() bool {
		// Only a run an executor took can be killed: running alone may still be on its way.
		x := mustJSON[api.Execution](t, s, "exec", "get", strconv.FormatInt(retry.ID, 10))
		return x.State == "running" && x.ExecutorAddress == ex.Address()
	})
	// The executor list counts the run the executor has now.
	if live := mustJSON[api.Page[api.Executor]](t, s, "executor", "list"); len(live.Items) != 1 || live.Items[0].Running != 1 {
		t.Errorf("executor list while one run is on it: %+v, want running 1", live.Items)
	}
	out = s.mustCLI(t, "exec", "kill", strconv.FormatInt(retry.ID, 10))
	if !strings.Contains(out, "canceled") {
		t.Fatalf("kill of the retry: %q", out)
	}
	xs := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", id)
	states := []string{}
	for _, x := range xs.Items {
		states = append(states, x.State)
	}
	if !slices.Equal(states, []string{"canceled", "canceled"}) {
		t.Errorf("executions after two kills: %v", states)
	}
}

// TestCLIRegisteredAppAndExecutorList: an app only an executor's registration made is listed
// and shown like a created one, and `sundial executor list` shows the live instances.
func TestCLIRegisteredAppAndExecutorList(t *testing.T) {
	s := startAPIServer(t)
	ex := startCLIExecutor(t, s, "reports")
	apps := mustJSON[api.Page[api.App]](t, s, "app", "list")
	if len(apps.Items) != 1 || apps.Items[0].Name != "reports" || apps.Items[0].AddressMode != "auto" {
		t.Errorf("app list with only a registered executor: %+v", apps.Items)
	}
	if got := s.mustCLI(t, "app", "get", "reports"); !strings.Contains(got, ex.Address()) {
		t.Errorf("app get of a registered app:\n%s", got)
	}
	for _, args := range [][]string{{"executor", "list"}, {"executor", "list", "--app", "reports"}} {
		live := mustJSON[api.Page[api.Executor]](t, s, args...)
		if len(live.Items) != 1 || live.Items[0].Address != ex.Address() || live.Items[0].App != "reports" {
			t.Errorf("%v: %+v", args, live.Items)
		}
	}
	// The table: address, app, version (the SDK's module version), handlers, running runs
	// and the last heartbeat.
	live := mustJSON[api.Page[api.Executor]](t, s, "executor", "list")
	table := s.mustCLI(t, "executor", "list")
	if len(live.Items) != 1 || live.Items[0].Version == "" || !strings.Contains(table, live.Items[0].Version) ||
		!strings.Contains(table, "RUNNING") || !strings.Contains(table, "LAST-HEARTBEAT") || live.Items[0].LastSeen.IsZero() {
		t.Errorf("executor list: %+v\n%s", live.Items, table)
	}
	if out := s.mustCLI(t, "executor", "list", "--app", "other"); strings.Contains(out, ex.Address()) {
		t.Errorf("executor list --app other shows the reports executor:\n%s", out)
	}
}

// TestCLIAppCredential: create shows the secret once, list shows none, rotate gives another,
// and a second create is refused; revoke makes the secret stop working, and a second revoke
// is refused in one line. On every database.
func TestCLIAppCredential(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		created := mustJSON[api.AppCredential](t, s, "app", "credential", "create", "billing")
		if created.App != "billing" || !strings.HasPrefix(created.Secret, "sde_") {
			t.Fatalf("credential create: %+v", created)
		}
		if code, _, errOut := s.cli(t, "app", "credential", "create", "billing"); code != 1 || !strings.Contains(errOut, "exists") {
			t.Fatalf("second create: exit %d, %q", code, errOut)
		}
		rotated := mustJSON[api.AppCredential](t, s, "app", "credential", "rotate", "billing")
		if rotated.Secret == "" || rotated.Secret == created.Secret || rotated.RotatedAt.IsZero() {
			t.Fatalf("credential rotate: %+v", rotated)
		}
		out := s.mustCLI(t, "app", "credential", "list", "billing")
		if !strings.Contains(out, "billing") || strings.Contains(out, rotated.Secret) {
			t.Fatalf("credential list:\n%s", out)
		}
		if code := executorCall(t, s, rotated.Secret); code != http.StatusNoContent {
			t.Fatalf("an executor request with the credential: %d, want 204", code)
		}

		if out := s.mustCLI(t, "app", "credential", "revoke", "billing"); !strings.Contains(out, `"billing" revoked`) {
			t.Fatalf("credential revoke: %q", out)
		}
		if code := executorCall(t, s, rotated.Secret); code != http.StatusUnauthorized {
			t.Fatalf("an executor request with the revoked credential: %d, want 401", code)
		}
		if creds := mustJSON[api.Page[api.AppCredential]](t, s, "app", "credential", "list", "billing"); len(creds.Items) != 0 {
			t.Fatalf("credential list after revoke: %+v", creds)
		}
		if code, _, errOut := s.cli(t, "app", "credential", "revoke", "billing"); code != 1 || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("second revoke: exit %d, %q: want 1 and one line", code, errOut)
		}
		// The app may be given a new one.
		mustJSON[api.AppCredential](t, s, "app", "credential", "create", "billing")
	})
}

// executorCall is an executor's unregistering of an address nobody registered, with
// credential: the status says whether the server took the credential.
func executorCall(t *testing.T, s *apiServer, credential string) int {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/api/v1/executor/unregister",
		strings.NewReader(`{"app":"billing","address":"http://127.0.0.1:1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCLIAppGetExecutorWithoutHandlers: an executor online with no handler is shown as such,
// not as an empty list.
func TestCLIAppGetExecutorWithoutHandlers(t *testing.T) {
	s := startAPIServer(t)
	ex, err := executor.New(executor.Config{Server: s.url, Token: cliExecutorToken, App: "idle", Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	got := s.mustCLI(t, "app", "get", "idle")
	if !strings.Contains(got, ex.Address()+" (no handlers; seen ") || strings.Contains(got, "(;") {
		t.Errorf("app get of an executor without handlers:\n%s", got)
	}
}

// TestCLIClearSecretsWarning (issue 20, item 13): pointing an app with secret-param jobs at
// an http:// address prints a warning on standard error (and succeeds); https:// does not.
func TestCLIClearSecretsWarning(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "app", "create", "legacy", "--mode", "manual", "--address", "https://10.0.0.5:9999")
	s.mustCLI(t, "job", "create", "backup", "--handler", "backup", "--app", "legacy", "--params", "pw=hunter2", "--params-secret")
	code, _, errOut := s.cli(t, "app", "update", "legacy", "--address", "http://10.0.0.5:9999")
	if code != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "in clear") || !strings.Contains(errOut, "http://10.0.0.5:9999") {
		t.Errorf("app update to an http address: exit %d, stderr %q: want 0 and the warning", code, errOut)
	}
	if code, _, errOut := s.cli(t, "app", "update", "legacy", "--address", "https://10.0.0.5:9999"); code != 0 || errOut != "" {
		t.Errorf("app update to an https address: exit %d, stderr %q: want 0 and no warning", code, errOut)
	}
}
