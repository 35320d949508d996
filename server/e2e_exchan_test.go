package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/store"
)

// The rest of issue 13's executor findings: the server's calls to executors carry no secret
// (they are signed), and a late result, a kill answer and a manual address's run are tied to
// the executor instance the run was handed to.

// listener stands at an app's manual address (anyone's URL) and records what the server
// sends there, answering as an executor whose instance is inst("rec-1").
type listener struct {
	url    string
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	runs   chan wire.RunRequest
}

func newListener(t *testing.T) *listener {
	l := &listener{runs: make(chan wire.RunRequest, 4)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.reqs, l.bodies = append(l.reqs, r.Clone(context.Background())), append(l.bodies, body)
		l.mu.Unlock()
		switch r.URL.Path {
		case wire.PathRun:
			var req wire.RunRequest
			_ = json.Unmarshal(body, &req)
			writeJSON(w, 200, wire.RunResponse{Accepted: true, Instance: inst("rec-1")})
			l.runs <- req
		default:
			writeJSON(w, 200, wire.BeatResponse{Instance: inst("rec-1")})
		}
	}))
	t.Cleanup(hs.Close)
	l.url = hs.URL
	return l
}

// manualRun points app billing at l, runs a remote job of it, and returns the run l got.
func (e *env) manualRun(l *listener) wire.RunRequest {
	e.t.Helper()
	e.call("PUT", "/api/v1/apps/billing", map[string]any{"address_mode": "manual", "addresses": []string{l.url}}, 200, nil)
	job := e.remoteJob("billing", "first", nil)
	e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
	select {
	case run := <-l.runs:
		eventually(e.t, "the dispatch to be recorded", func() bool { return e.execution(run.ExecutionID).ExecutorAddress == l.url })
		return run
	case <-time.After(15 * time.Second):
		e.t.Fatal("the manual address received no run")
		return wire.RunRequest{}
	}
}

// TestNoSecretToManualAddress: a manual address pointed at someone's listener receives no
// secret of either side: no Authorization header, neither the global executor token nor an
// app credential nor the cluster's private key anywhere in the headers; only a signature,
// which verifies with the cluster's public key. Before the fix the listener got
// "Authorization: Bearer <executor token>".
func TestNoSecretToManualAddress(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		var cred api.AppCredential
		e.call("POST", "/api/v1/apps/billing/credentials", nil, 201, &cred)
		l := newListener(t)
		run := e.manualRun(l)

		keys, err := e.st.ClusterKeys(context.Background())
		if err != nil || len(keys) == 0 {
			t.Fatalf("cluster keys %v %v", keys, err)
		}
		secrets := []string{execToken, cred.Secret, keys[0].PrivateKey, strings.TrimPrefix(keys[0].PrivateKey, "ed25519:")}
		v := execsign.NewVerifier(time.Now)
		pub, err := e.srv.remote.ClusterKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := v.SetKeys(pub); err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.reqs) < 2 {
			t.Fatalf("%d requests reached the listener, want a beat and a run", len(l.reqs))
		}
		for i, r := range l.reqs {
			for name, vals := range r.Header {
				if name == "Authorization" || name == "Cookie" || name == "Proxy-Authorization" {
					t.Errorf("%s %s carried %s: %q", r.Method, r.URL.Path, name, vals)
				}
				for _, val := range vals {
					for _, s := range secrets {
						if strings.Contains(val, s) {
							t.Errorf("%s %s header %s carries a secret", r.Method, r.URL.Path, name)
						}
					}
				}
			}
			// Signed by the cluster: it verifies with the public key executors are given.
			if _, err := v.Verify(r, r.URL.Path, l.bodies[i]); err != nil {
				t.Errorf("%s %s: %v", r.Method, r.URL.Path, err)
			}
		}
		// The run is signed for the instance that answered the beat.
		if last := l.reqs[len(l.reqs)-1]; run.Instance != inst("rec-1") || !strings.Contains(last.Header.Get(execsign.Header), "instance="+inst("rec-1")+",") {
			t.Fatalf("the run names instance %q, signature %q; want rec-1", run.Instance, last.Header.Get(execsign.Header))
		}
	})
}

// TestManualRunTiedToInstance: a manual address's run is recorded for the instance that
// answered there, so another instance of the app cannot report its result (409, counted).
// Before the fix the run was recorded for no instance and any of the app's took it.
func TestManualRunTiedToInstance(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		run := e.manualRun(newListener(t))
		now := time.Now().UnixMilli()
		e.executorAs(sender{"billing", inst("someone-else")}, "results", result(run.ExecutionID, now, now), 409, nil)
		if n := e.rejected(rejectWrongInstance); n != 1 {
			t.Fatalf("wrong_instance refusals %v, want 1", n)
		}
		if x := e.execution(run.ExecutionID); x.State != "running" {
			t.Fatalf("another instance finished the manual address's run: %+v", x)
		}
		e.executorAs(sender{"billing", inst("rec-1")}, "results", result(run.ExecutionID, now, now), 200, nil)
		if x := e.execution(run.ExecutionID); x.State != "succeeded" {
			t.Fatalf("the instance that took the run could not finish it: %+v", x)
		}
	})
}

// TestLateResultFromAnotherInstance: the run's executor restarted (a new instance beats at
// its address), so the run is declared lost; a late result about it is taken from the
// instance it had been handed to only. Before the fix any instance (or app) could record
// one.
func TestLateResultFromAnotherInstance(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		fe := e.execution(id).ExecutorAddress
		e.executorAs(sender{"billing", inst("i2")}, "register", map[string]any{"app": "billing", "address": fe,
			"instance": inst("i2"), "handlers": []string{"report"}}, 200, nil)
		if x := e.execution(id); x.State != "lost" {
			t.Fatalf("after the executor restarted the run is %s, want lost", x.State)
		}
		now := time.Now().UnixMilli()
		e.executorAs(sender{"billing", inst("i2")}, "results", result(id, now, now), 409, nil)
		e.executorAs(sender{"payroll", inst("i1")}, "results", result(id, now, now), 403, nil)
		if a, i := e.rejected(rejectWrongApp), e.rejected(rejectWrongInstance); a != 1 || i != 1 {
			t.Fatalf("rejected wrong_app %v, wrong_instance %v; want 1 and 1", a, i)
		}
		if x := e.execution(id); x.State != "lost" {
			t.Fatalf("a late result from another instance was recorded: %+v", x)
		}
		e.executorAs(sender{"billing", inst("i1")}, "results", result(id, now, now), 200, nil)
		if x := e.execution(id); x.State != "succeeded" || !strings.HasSuffix(x.HandleMsg, engine.LateSuffix) {
			t.Fatalf("the late result of the run's own instance: %+v, want succeeded, marked late", x)
		}
	})
}

// TestKillAnswerFromAnotherInstance: the kill is signed for the instance the run was handed
// to; an answer from another process at the address ("not running it") is refused and
// counted, and the run stays running, where before it was ended canceled on that answer.
func TestKillAnswerFromAnotherInstance(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id, fe := trustEnvWith(t, dialect)
		fe.mu.Lock()
		fe.instance = inst("i9") // the executor at the address restarted
		fe.mu.Unlock()
		e.call("POST", "/api/v1/executions/"+itoa(id)+"/kill", nil, 409, nil)
		if n := e.rejected(rejectWrongInstance); n != 1 {
			t.Fatalf("wrong_instance refusals %v, want 1", n)
		}
		if x := e.execution(id); x.State != "running" {
			t.Fatalf("another instance's kill answer ended the run: %+v", x)
		}
		fe.mu.Lock()
		fe.instance = inst("i1")
		kills := fe.kills
		fe.mu.Unlock()
		if len(kills) != 1 || kills[0] != (killCall{inst("i1"), id}) {
			t.Fatalf("kill calls %+v, want one signed for i1", kills)
		}
		var x api.Execution
		e.call("POST", "/api/v1/executions/"+itoa(id)+"/kill", nil, 202, &x)
		if x.State != "canceled" {
			t.Fatalf("killed by its own instance: %+v, want canceled", x)
		}
	})
}

// TestInProcessRunNotAnExecutors: a run of an in-process job (no executor address) takes no
// result or output from an executor, running or lost, whichever app the executor names;
// before the fix, an executor of no app (the global token) could finish one, or record a
// "late" result for one lost with its node.
func TestInProcessRunNotAnExecutors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		ctx := context.Background()
		job := &store.Job{Group: "g", Name: "local", TargetKind: store.TargetLocal, Handler: "noop",
			Concurrency: store.ConcurrencyAllow, Enabled: true}
		if err := e.st.JobInsert(ctx, job); err != nil {
			t.Fatal(err)
		}
		ghost := store.Owner{Node: "ghost", Incarnation: "g1"}
		// Fired now: a run fired in 1970 is the retention duty's to delete once it has ended,
		// and the duty runs when the node starts to lead, which may be after the run is lost.
		now := time.Now().UnixMilli()
		x := &store.Execution{JobID: job.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseManual, Node: ghost.Node,
			Incarnation: ghost.Incarnation, State: store.ExecRunning}
		if _, err := e.st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
			t.Fatal(err)
		}
		e.executorAs(sender{}, "results", result(x.ID, now, now), 409, nil)
		e.executorAs(sender{}, "logs", map[string]any{"execution_id": x.ID,
			"lines": []map[string]any{{"line": 1, "at": now, "message": "planted"}}}, 409, nil)
		if _, err := e.st.ExecutionsLoseRunning(ctx, ghost); err != nil {
			t.Fatal(err)
		}
		e.executorAs(sender{}, "results", result(x.ID, now, now), 409, nil)
		if got := e.execution(x.ID); got.State != "lost" {
			t.Fatalf("an executor's result changed an in-process run: %+v", got)
		}
		if n := e.rejected(rejectNotLive); n != 3 {
			t.Fatalf("not_live refusals %v, want 3", n)
		}
	})
}
