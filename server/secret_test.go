package server

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

const secretValue = "db-password=correct-horse-battery"

func testKeyring(t *testing.T, id string, fill byte) *secret.Keyring {
	t.Helper()
	k := make([]byte, secret.KeyLen)
	for i := range k {
		k[i] = fill
	}
	ring, err := secret.Parse(id + ":" + base64.StdEncoding.EncodeToString(k))
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// storedText returns every text the database holds about the job: its row and its audit
// entries, read with plain SQL past the store.
func storedText(t *testing.T, db *sql.DB, jobID int64) string {
	t.Helper()
	var b strings.Builder
	var params string
	if err := db.QueryRow("SELECT params FROM jobs WHERE id = " + itoa(jobID)).Scan(&params); err != nil {
		t.Fatal(err)
	}
	b.WriteString(params)
	rows, err := db.Query("SELECT before_json, after_json FROM audit_log")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var before, after sql.NullString
		if err := rows.Scan(&before, &after); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n" + before.String + "\n" + after.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSecretParams: a job's secret params are stored sealed on every database (neither the
// job row nor the audit log holds them), shown as *** by the API and the audit log, kept
// by a PUT that sends the mask back, and handed in clear to the in-process handler and in
// the executor's /run body.
func TestSecretParams(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		got := make(chan string, 4)
		e := newEnvOn(t, openStore(t, dialect), func(c *Config) {
			c.ExecutorToken = execToken
			c.Scheduler.Secrets = testKeyring(t, "k1", 7)
		}, func(s *Server) {
			s.Register("grab", func(ctx context.Context) error {
				got <- sundial.ExecutionFrom(ctx).Params
				return nil
			})
			s.Register("grab-failing", func(ctx context.Context) error {
				got <- sundial.ExecutionFrom(ctx).Params
				return errors.New("failing on purpose")
			})
		})
		c := e.client()
		ctx := context.Background()
		j := must(c.CreateJob(ctx, api.JobRequest{Name: "s", Handler: "grab", Params: secretValue, ParamsSecret: true}))(t)
		if j.Params != secret.Mask || !j.ParamsSecret {
			t.Fatalf("created job shows params %q secret %v, want %q true", j.Params, j.ParamsSecret, secret.Mask)
		}
		if g := must(c.GetJob(ctx, j.ID))(t); g.Params != secret.Mask {
			t.Fatalf("GET shows params %q", g.Params)
		}
		must(c.RunJob(ctx, j.ID))(t)
		if p := <-got; p != secretValue {
			t.Fatalf("the handler got params %q, want the secret in clear", p)
		}

		// A read-modify-write with the mask keeps the secret.
		req := j.Request()
		req.Description = "changed"
		must(c.UpdateJob(ctx, j.ID, req))(t)
		must(c.RunJob(ctx, j.ID))(t)
		if p := <-got; p != secretValue {
			t.Fatalf("after a PUT of the mask the handler got %q", p)
		}

		stored := storedText(t, e.st.DB(), j.ID)
		if strings.Contains(stored, "correct-horse") {
			t.Fatalf("the database holds the secret in clear:\n%s", stored)
		}
		if !strings.HasPrefix(stored, "sdl1:k1:") {
			t.Fatalf("stored params %.40q are not sealed under k1", stored)
		}
		audit := must(c.ListAudit(ctx, api.AuditFilter{TargetKind: "job", Target: itoa(j.ID)}))(t)
		if len(audit.Items) < 2 {
			t.Fatalf("audit entries of the job: %d, want create and update", len(audit.Items))
		}
		for _, a := range audit.Items {
			if a.Action != "job.create" && a.Action != "job.update" {
				continue
			}
			if strings.Contains(string(a.After), "correct-horse") || strings.Contains(string(a.After), "sdl1:") ||
				!strings.Contains(string(a.After), `"params":"***"`) {
				t.Fatalf("audit %s after = %s, want params masked", a.Action, a.After)
			}
		}

		// The executor's /run body carries the params in clear, marked secret.
		fe := newFakeExecutor(t)
		e.register("pay", fe, "report")
		rj := must(c.CreateJob(ctx, api.JobRequest{Name: "r", Handler: "report", App: "pay", Params: secretValue, ParamsSecret: true}))(t)
		must(c.RunJob(ctx, rj.ID))(t)
		if run := fe.nextRun(); run.Params != secretValue || !run.ParamsSecret {
			t.Fatalf("executor /run params %q secret %v", run.Params, run.ParamsSecret)
		}

		// A run-now's own params of a secret job are as secret: sealed in the execution (and
		// in the retry that copies them), shown as ***, handed in clear.
		const runSecret = "token=run-only-staple"
		x := must(c.RunJobWith(ctx, rj.ID, api.RunRequest{Params: runSecret}))(t)
		if x.Params != secret.Mask {
			t.Fatalf("the run-now execution shows params %q, want %q", x.Params, secret.Mask)
		}
		if run := fe.nextRun(); run.Params != runSecret || !run.ParamsSecret {
			t.Fatalf("executor /run of the run-now: params %q secret %v, want its own params in clear", run.Params, run.ParamsSecret)
		}
		failing := must(c.CreateJob(ctx, api.JobRequest{Name: "f", Handler: "grab-failing", Params: secretValue, ParamsSecret: true,
			MaxRetries: 1}))(t)
		first := must(c.RunJobWith(ctx, failing.ID, api.RunRequest{Params: runSecret}))(t)
		for attempt := range 2 {
			if p := <-got; p != runSecret {
				t.Fatalf("attempt %d of a failing run-now got params %q, want %q", attempt, p, runSecret)
			}
		}
		runs := must(e.st.ExecutionList(ctx, store.ExecutionFilter{JobID: failing.ID}))(t)
		if len(runs) != 2 || runs[0].ID != first.ID {
			t.Fatalf("executions of the failing job: %d, want the run-now and its retry", len(runs))
		}
		retry := e.awaitState(runs[1].ID, "failed")
		if retry.Attempt != 1 || retry.Params != secret.Mask {
			t.Fatalf("the retry: attempt %d params %q, want attempt 1 showing %q", retry.Attempt, retry.Params, secret.Mask)
		}
		rows, err := e.st.DB().Query("SELECT params FROM executions UNION ALL SELECT params FROM executions_live")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		sealed := 0
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(p, "run-only-staple") {
				t.Fatalf("an execution row holds a run's secret params in clear: %q", p)
			}
			if strings.HasPrefix(p, "sdl1:k1:") {
				sealed++
			}
		}
		if sealed != 3 {
			t.Fatalf("%d execution rows hold sealed params, want 3 (the run-now, the failing one and its retry)", sealed)
		}
	})
}

// TestSecretParamsRefused: without a key a secret is refused naming params_secret (nothing
// stored); the mask is not a value; a script cannot be secret.
func TestSecretParamsRefused(t *testing.T) {
	e := newEnv(t, "sqlite")
	er := e.callErr("POST", "/api/v1/jobs", api.JobRequest{Name: "s", Handler: "noop", Params: secretValue, ParamsSecret: true}, http.StatusBadRequest)
	if er.Field != "params_secret" || !strings.Contains(er.Message, "no secret key is configured") {
		t.Fatalf("without a key: %+v", er)
	}
	if js, _ := e.st.JobList(context.Background(), store.JobFilter{Limit: 10}); len(js) != 0 {
		t.Fatalf("a refused secret job was stored: %+v", js[0])
	}
	k := newEnvWith(t, "sqlite", func(c *Config) { c.Scheduler.Secrets = testKeyring(t, "k1", 7) })
	if er := k.callErr("POST", "/api/v1/jobs", api.JobRequest{Name: "m", Handler: "noop", Params: secret.Mask, ParamsSecret: true}, http.StatusBadRequest); er.Field != "params" {
		t.Fatalf("the mask as a new secret: %+v", er)
	}
	if er := k.callErr("POST", "/api/v1/jobs", api.JobRequest{Name: "sh", Handler: "shell", Params: "echo", ParamsSecret: true}, http.StatusBadRequest); er.Field != "params_secret" {
		t.Fatalf("a secret script: %+v", er)
	}
}

// TestSecretParamsOldClearRuns: an execution row that holds a secret job's params in clear (a
// run-now stored before such params were sealed, or before the job's params became secret)
// shows them as *** like a sealed one, in every read: the API's get, list and retry, and the
// console's ops (its execution page and attempts). The retry still runs with the params,
// sealed in its own row.
func TestSecretParamsOldClearRuns(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		got := make(chan string, 4)
		e := newEnvOn(t, openStore(t, dialect), func(c *Config) {
			c.Scheduler.Secrets = testKeyring(t, "k1", 7)
		}, func(s *Server) {
			s.Register("grab", func(ctx context.Context) error {
				got <- sundial.ExecutionFrom(ctx).Params
				return nil
			})
		})
		c := e.client()
		ctx := context.Background()
		const old = "token=old-clear-staple"
		j := must(c.CreateJob(ctx, api.JobRequest{Name: "was-plain", Handler: "grab", Params: "p"}))(t)
		x := must(c.RunJobWith(ctx, j.ID, api.RunRequest{Params: old}))(t)
		if p := <-got; p != old {
			t.Fatalf("the run got %q", p)
		}
		e.awaitState(x.ID, "succeeded")
		req := j.Request()
		req.Params, req.ParamsSecret = "now-secret", true
		must(c.UpdateJob(ctx, j.ID, req))(t)

		check := func(what string, params string) {
			t.Helper()
			// The console's ops answer store rows: a sealed value is shown as the mask there.
			if strings.Contains(params, "old-clear") || secret.Shown(params) != secret.Mask {
				t.Fatalf("%s shows params %q, want %q", what, params, secret.Mask)
			}
		}
		check("GET /executions/{id}", must(c.GetExecution(ctx, x.ID))(t).Params)
		page := must(c.ListExecutions(ctx, api.ExecutionFilter{JobID: j.ID}, api.ListOptions{}))(t)
		if len(page.Items) != 1 {
			t.Fatalf("executions of the job: %d, want 1", len(page.Items))
		}
		check("GET /executions", page.Items[0].Params)
		retry := must(c.RetryExecution(ctx, x.ID))(t)
		check("the retry's answer", retry.Params)
		if p := <-got; p != old {
			t.Fatalf("the retry got %q, want the run's own params", p)
		}
		if row := must(e.st.ExecutionGet(ctx, retry.ID))(t); !strings.HasPrefix(row.Params, "sdl1:k1:") {
			t.Fatalf("the retry's row holds params %.30q, want them sealed: a new row of a secret job keeps none in clear", row.Params)
		}

		o := e.srv.Ops()
		as := withCaller(ctx, newPrincipal(&store.User{ID: 99, Name: "viewer", Role: store.RoleViewer, Scope: "*"}, nil), "in-process")
		check("the console's execution", must(o.GetExecution.Execute(as, &ExecutionRef{ID: x.ID}))(t).Params)
		for _, y := range *must(o.ExecutionAttempts.Execute(as, &ExecutionRef{ID: x.ID}))(t) {
			check(fmt.Sprintf("the console's attempt %d", y.Attempt), y.Params)
		}
		for _, y := range must(o.ListExecutions.Execute(as, &ExecutionQuery{JobID: j.ID}))(t).Executions {
			check(fmt.Sprintf("the console's list (execution %d)", y.ID), y.Params)
		}
	})
}
