package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/store"
)

const execToken = "executor-secret"

// fakeExecutor is the protocol peer: a small HTTP server that takes runs as an executor
// would (docs/executor-protocol.md) and hands them to the test.
type fakeExecutor struct {
	t    *testing.T
	url  string
	runs chan wire.RunRequest
	mu   sync.Mutex
	// refuse makes /run answer accepted=false.
	refuse bool
	// instance is what a beat and a kill answer: "" (the default) as an executor that does
	// not name its process; a manual address's runs go only to an executor that does.
	instance string
	// kills are the /kill calls' signed instances and execution ids.
	kills []killCall
}

type killCall struct {
	instance string
	id       int64
}

func newFakeExecutor(t *testing.T) *fakeExecutor {
	fe := &fakeExecutor{t: t, runs: make(chan wire.RunRequest, 16)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server sends no credential to an executor, only the cluster's signature (which
		// the executor SDK's tests verify).
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("executor called with a credential: %q", got)
		}
		if r.Header.Get(execsign.Header) == "" {
			t.Errorf("executor called without the cluster signature")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/run":
			var req wire.RunRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("run body: %v", err)
			}
			fe.mu.Lock()
			refuse := fe.refuse
			fe.mu.Unlock()
			if refuse {
				writeJSON(w, 200, map[string]any{"accepted": false, "message": "no such handler"})
				return
			}
			fe.runs <- req
			writeJSON(w, 200, map[string]any{"accepted": true, "instance": req.Instance})
		case "/kill":
			var req wire.KillRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("kill body: %v", err)
			}
			_, signed, _ := strings.Cut(r.Header.Get(execsign.Header), "instance=")
			signed, _, _ = strings.Cut(signed, ",")
			fe.mu.Lock()
			fe.kills = append(fe.kills, killCall{signed, req.ExecutionID})
			instance := fe.instance
			fe.mu.Unlock()
			// It runs nothing, so it never has the run: the server ends it canceled.
			writeJSON(w, 200, wire.KillResponse{Killed: false, Instance: instance})
		case "/beat":
			fe.mu.Lock()
			instance := fe.instance
			fe.mu.Unlock()
			writeJSON(w, 200, wire.BeatResponse{Instance: instance})
		case "/idle-beat":
			writeJSON(w, 200, map[string]any{"idle": true})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(hs.Close)
	fe.url = hs.URL
	return fe
}

// nextRun waits (bounded) for the next run the executor receives.
func (fe *fakeExecutor) nextRun() wire.RunRequest {
	fe.t.Helper()
	select {
	case r := <-fe.runs:
		return r
	case <-time.After(15 * time.Second):
		fe.t.Fatalf("executor %s received no run", fe.url)
		return wire.RunRequest{}
	}
}

// executor sends a protocol request to the server with the executor token, from no app.
func (e *env) executor(path string, body any, wantStatus int, out any) {
	e.t.Helper()
	e.executorAs(sender{}, path, body, wantStatus, out)
}

// testInstances are the keys of the executor instances tests name, by instance id.
var testInstances = struct {
	sync.Mutex
	byName map[string]*execsign.InstanceKey
	byID   map[string]*execsign.InstanceKey
}{byName: map[string]*execsign.InstanceKey{}, byID: map[string]*execsign.InstanceKey{}}

// inst is the id of the executor instance a test calls name (the same in every test), whose
// key executorAs proves it with.
func inst(name string) string {
	testInstances.Lock()
	defer testInstances.Unlock()
	k := testInstances.byName[name]
	if k == nil {
		var err error
		if k, err = execsign.NewInstanceKey(); err != nil {
			panic(err)
		}
		testInstances.byName[name], testInstances.byID[k.ID()] = k, k
	}
	return k.ID()
}

func instanceKey(id string) *execsign.InstanceKey {
	testInstances.Lock()
	defer testInstances.Unlock()
	return testInstances.byID[id]
}

// executorAs sends a protocol request naming its sender as the SDK does, proving the
// instance (one inst made) with its key.
func (e *env) executorAs(from sender, path string, body any, wantStatus int, out any) {
	e.t.Helper()
	e.executorWith(execToken, from, path, body, wantStatus, out)
}

// executorWith is executorAs with another credential than the executor token.
func (e *env) executorWith(token string, from sender, path string, body any, wantStatus int, out any) {
	e.t.Helper()
	e.executorProven(token, from, instanceKey(from.instance), path, body, wantStatus, out)
}

// executorProven is executorWith proving the sender's instance with key (none when nil),
// which an attacker picks.
func (e *env) executorProven(token string, from sender, key *execsign.InstanceKey, path string, body any, wantStatus int, out any) {
	e.t.Helper()
	resp, err := e.executorSend(token, from, key, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != wantStatus {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("executor %s: status %d, want %d: %s", path, resp.StatusCode, wantStatus, b)
	}
	if out != nil {
		mustDecode(e.t, resp, out)
	}
}

// executorSend sends a protocol request as executorProven does and returns the answer; it
// may be called from any goroutine.
func (e *env) executorSend(token string, from sender, key *execsign.InstanceKey, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest("POST", e.url+"/api/v1/executor/"+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.HeaderApp, from.app)
	req.Header.Set(wire.HeaderInstance, from.instance)
	if key != nil {
		key.Prove(req, req.URL.Path, b, from.app, time.Now())
	}
	return http.DefaultClient.Do(req)
}

func (e *env) register(app string, fe *fakeExecutor, handlers ...string) {
	e.t.Helper()
	var out struct {
		HeartbeatIntervalMs int64 `json:"heartbeat_interval_ms"`
	}
	e.executor("register", map[string]any{"app": app, "address": fe.url, "handlers": handlers}, 200, &out)
	if out.HeartbeatIntervalMs != e.srv.cfg.ExecutorHeartbeat.Milliseconds() {
		e.t.Fatalf("heartbeat_interval_ms = %d, want %d", out.HeartbeatIntervalMs, e.srv.cfg.ExecutorHeartbeat.Milliseconds())
	}
}

func newExecutorEnv(t *testing.T, dialect string, heartbeat time.Duration) *env {
	return newEnvWith(t, dialect, func(c *Config) {
		c.ExecutorToken = execToken
		c.ExecutorHeartbeat = heartbeat
		c.Scheduler.HeartbeatInterval = 200 * time.Millisecond // leadership soon after start
	})
}

// remoteJob stores a remote job of app and returns its id.
func (e *env) remoteJob(app, routing string, tune func(*store.Job)) int64 {
	e.t.Helper()
	j := &store.Job{Group: "g", Name: app + "-" + routing, TargetKind: store.TargetRemote, App: app, Handler: "report",
		Routing: routing, Concurrency: store.ConcurrencyAllow, Enabled: true}
	if tune != nil {
		tune(j)
	}
	if err := e.st.JobInsert(context.Background(), j); err != nil {
		e.t.Fatal(err)
	}
	return j.ID
}

func (e *env) execution(id int64) api.Execution {
	e.t.Helper()
	return *must(e.client().GetExecution(context.Background(), id))(e.t)
}

// jobExecutions lists a job's executions, oldest first.
func (e *env) jobExecutions(job int64) []api.Execution {
	e.t.Helper()
	return must(e.client().ListExecutions(context.Background(), api.ExecutionFilter{JobID: job, Order: "asc"}, api.ListOptions{}))(e.t).Items
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestExecutorRegistry(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		fe := newFakeExecutor(t)
		body := map[string]any{"app": "billing", "address": fe.url, "handlers": []string{"report"}}
		for _, tok := range []string{"", "wrong", e.token} { // a person's API token is no executor token
			if resp := e.raw("POST", "/api/v1/executor/register", tok, nil, body); resp.StatusCode != 401 {
				t.Fatalf("register with token %q: status %d, want 401", tok, resp.StatusCode)
			}
		}
		e.register("billing", fe, "report")

		c, ctx := e.client(), context.Background()
		list := must(c.ListExecutors(ctx, "", api.ListOptions{}))(t)
		if len(list.Items) != 1 || list.Items[0].Address != fe.url || !slices.Equal(list.Items[0].Handlers, []string{"report"}) {
			t.Fatalf("executors after register: %+v", list.Items)
		}

		must(c.PutApp(ctx, "billing", api.AppRequest{Title: "Billing"}))(t)
		if _, err := c.PutApp(ctx, "x", api.AppRequest{AddressMode: "manual"}); api.StatusOf(err) != 400 {
			t.Fatalf("manual app without addresses: %v, want 400", err)
		}
		apps := must(c.ListApps(ctx, api.ListOptions{}))(t)
		if len(apps.Items) != 1 || apps.Items[0].Title != "Billing" || apps.Items[0].AddressMode != "auto" {
			t.Fatalf("apps: %+v", apps.Items)
		}

		e.executor("unregister", map[string]any{"app": "billing", "address": fe.url}, 204, nil)
		if list = must(c.ListExecutors(ctx, "billing", api.ListOptions{}))(t); len(list.Items) != 0 {
			t.Fatalf("executors after unregister: %+v", list.Items)
		}
		if err := c.DeleteApp(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetApp(ctx, "billing"); !api.IsNotFound(err) {
			t.Fatalf("deleted app: %v", err)
		}
	})
}

// TestRemoteRun: a remote job's fire goes to the registered executor, its output lines and
// result come back through the protocol, and the execution completes.
func TestRemoteRun(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		fe := newFakeExecutor(t)
		e.register("billing", fe, "report")
		job := e.remoteJob("billing", "round_robin", func(j *store.Job) { j.Params = "month=11"; j.TimeoutMs = 5000 })

		var started api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &started)
		run := fe.nextRun()
		if run.ExecutionID != started.ID || run.JobID != job || run.Handler != "report" || run.Params != "month=11" ||
			run.TimeoutMs != 5000 || run.ShardTotal != 1 {
			t.Fatalf("run request %+v for execution %d", run, started.ID)
		}
		eventually(t, "the dispatch to be recorded", func() bool {
			x := e.execution(run.ExecutionID)
			return x.State == "running" && x.ExecutorAddress == fe.url
		})

		now := time.Now().UnixMilli()
		billing := sender{app: "billing"}
		e.executorAs(billing, "logs", map[string]any{"execution_id": run.ExecutionID, "lines": []map[string]any{
			{"line": 1, "at": now, "message": "started"}, {"line": 2, "at": now, "message": "done"}}}, 204, nil)
		var done struct {
			Completed []int64 `json:"completed"`
		}
		result := map[string]any{"results": []map[string]any{{"execution_id": run.ExecutionID, "state": "succeeded",
			"code": 200, "message": "ok", "started_at": now, "finished_at": now + 5}}}
		e.executorAs(billing, "results", result, 200, &done)
		if !slices.Equal(done.Completed, []int64{run.ExecutionID}) {
			t.Fatalf("completed %v", done.Completed)
		}
		e.executorAs(billing, "results", result, 200, &done)
		if len(done.Completed) != 0 {
			t.Fatalf("a result reported twice completed %v", done.Completed)
		}
		if x := e.execution(run.ExecutionID); x.State != "succeeded" || x.HandleMsg != "ok" {
			t.Fatalf("execution after its result: %+v", x)
		}
		var out api.Page[api.LogLine]
		e.call("GET", "/api/v1/executions/"+itoa(run.ExecutionID)+"/output", nil, 200, &out)
		if len(out.Items) != 2 || out.Items[0].Message != "started" || out.Items[1].Message != "done" {
			t.Fatalf("output: %+v", out.Items)
		}
		e.executorAs(billing, "results", map[string]any{"results": []map[string]any{{"execution_id": run.ExecutionID, "state": "lost"}}}, 400, nil)
	})
}

// TestRemoteNoExecutor: with no instance online the fire fails with the reason and is retried
// per the job; a refusing executor fails it the same way.
func TestRemoteNoExecutor(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		job := e.remoteJob("nobody", "first", func(j *store.Job) { j.MaxRetries = 1; j.RetryBackoffMs = 10 })
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		var xs []api.Execution
		eventually(t, "the fire and its retry to fail", func() bool {
			xs = e.jobExecutions(job)
			return len(xs) == 2 && xs[1].State == "failed"
		})
		for _, x := range xs {
			if x.State != "failed" || !strings.Contains(x.HandleMsg, `no executor of app "nobody" is online`) {
				t.Fatalf("execution %+v: want failed with the reason", x)
			}
		}
		if xs[1].Attempt != 1 {
			t.Fatalf("retry attempt %d", xs[1].Attempt)
		}

		fe := newFakeExecutor(t)
		fe.refuse = true
		e.register("refusing", fe)
		job = e.remoteJob("refusing", "first", nil)
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		eventually(t, "the refused fire to fail", func() bool {
			xs = e.jobExecutions(job)
			return len(xs) == 1 && xs[0].State == "failed"
		})
		if !strings.Contains(xs[0].HandleMsg, "refused") || !strings.Contains(xs[0].HandleMsg, "no such handler") {
			t.Fatalf("refused fire message %q", xs[0].HandleMsg)
		}
	})
}

// TestRemoteExecutorLost: an executor that stops heartbeating while it runs a fire is swept by
// the leader, and the fire is lost and retried per the job.
func TestRemoteExecutorLost(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, 200*time.Millisecond)
		fe := newFakeExecutor(t)
		e.register("billing", fe)
		// It beats until the run reaches it, so that a slow machine cannot sweep it before the
		// dispatch; then it falls silent.
		beating := make(chan struct{})
		go func() {
			body := fmt.Sprintf(`{"app":"billing","address":%q}`, fe.url)
			for {
				select {
				case <-beating:
					return
				case <-time.After(100 * time.Millisecond):
				}
				req, _ := http.NewRequest("POST", e.url+"/api/v1/executor/register", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+execToken)
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}()
		job := e.remoteJob("billing", "first", func(j *store.Job) { j.MaxRetries = 1; j.RetryBackoffMs = 10 })
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		run := fe.nextRun()
		close(beating)

		var xs []api.Execution
		eventually(t, "the execution to be lost and its retry to run", func() bool {
			xs = e.jobExecutions(job)
			return len(xs) == 2 && xs[1].State == "failed"
		})
		if xs[0].ID != run.ExecutionID || xs[0].State != "lost" {
			t.Fatalf("the run on the silent executor: %+v, want lost", xs[0])
		}
		// The retry found the executor gone.
		if xs[1].Attempt != 1 || !strings.Contains(xs[1].HandleMsg, "no executor") {
			t.Fatalf("retry: %+v", xs[1])
		}
		var list api.Page[api.Executor]
		e.call("GET", "/api/v1/executors", nil, 200, &list)
		if len(list.Items) != 0 {
			t.Fatalf("the silent executor is still listed: %+v", list.Items)
		}
	})
}

// TestShardingBroadcast: one fire reaches every instance, each with its shard index and the
// total, as one execution per shard.
func TestShardingBroadcast(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		fes := []*fakeExecutor{newFakeExecutor(t), newFakeExecutor(t), newFakeExecutor(t)}
		for _, fe := range fes {
			e.register("batch", fe, "report")
		}
		sorted := []string{fes[0].url, fes[1].url, fes[2].url}
		slices.Sort(sorted)
		job := e.remoteJob("batch", "sharding_broadcast", nil)
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)

		seen := map[int]bool{}
		var results []map[string]any
		for _, fe := range fes {
			run := fe.nextRun()
			if run.ShardTotal != 3 || seen[run.ShardIndex] || sorted[run.ShardIndex] != fe.url {
				t.Fatalf("executor %s got shard %d/%d (seen %v); want its index in the sorted addresses", fe.url,
					run.ShardIndex, run.ShardTotal, seen)
			}
			seen[run.ShardIndex] = true
			results = append(results, map[string]any{"execution_id": run.ExecutionID, "state": "succeeded"})
		}
		e.executorAs(sender{app: "batch"}, "results", map[string]any{"results": results}, 200, nil)
		xs := e.jobExecutions(job)
		if len(xs) != 3 {
			t.Fatalf("%d executions, want one per shard", len(xs))
		}
		for _, x := range xs {
			if x.State != "succeeded" || x.ShardTotal != 3 || x.ExecutorAddress != sorted[x.ShardIndex] {
				t.Fatalf("shard execution %+v", x)
			}
		}
	})
}
