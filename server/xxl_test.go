package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

const xxlSecretKey = "the-servers-secret-key-for-tests"

// newXXLEnv is a server that can keep xxl-job tokens and pulls live output often.
func newXXLEnv(t *testing.T, dialect string) *env {
	return newEnvWith(t, dialect, func(c *Config) {
		c.SecretKey = xxlSecretKey
		c.XXLLogInterval = 50 * time.Millisecond
	})
}

// output is what `sundial exec logs ID` prints: the execution's output lines.
func (e *env) output(id int64) []string {
	e.t.Helper()
	p := must(e.client().ExecutionOutput(context.Background(), id, api.ListOptions{Limit: 1000}))(e.t)
	out := make([]string, len(p.Items))
	for i, l := range p.Items {
		out[i] = l.Message
	}
	return out
}

func containsLine(lines []string, sub string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) })
}

// TestXXLJobExecutors drives XXL-JOB executors of each generation (2.x, 3.3, 3.5), three of
// each, over real sockets on every database: they register through the admin API (2.x under
// /xxl-job-admin, the others at /), take runs under several routing strategies and a sharding
// broadcast, write log lines Sundial pulls while they run and at the end, get killed, and
// call back, also twice, late, for unknown runs and with a wrong token.
func TestXXLJobExecutors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newXXLEnv(t, dialect)
		for _, gen := range []string{"2.x", "3.3", "3.5"} {
			t.Run(gen, func(t *testing.T) { testXXLGeneration(t, e, gen) })
		}
	})
}

func testXXLGeneration(t *testing.T, e *env, gen string) {
	ctx := context.Background()
	c := e.client()
	app := "xxl-" + strings.ReplaceAll(gen, ".", "")
	token := "executors-token-of-" + app

	// No default token: an xxl-job app without one, or with XXL-JOB's public default, is refused.
	for _, tok := range []string{"", "default_token"} {
		_, err := c.PutApp(ctx, app, api.AppRequest{Protocol: "xxl-job", ProtocolVersion: gen, XXLAccessToken: tok})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Field != "xxl_access_token" {
			t.Fatalf("xxl-job app with token %q: %v, want a refusal naming xxl_access_token", tok, err)
		}
	}
	a := must(c.PutApp(ctx, app, api.AppRequest{Protocol: "xxl-job", ProtocolVersion: gen, XXLAccessToken: token}))(t)
	if a.Protocol != "xxl-job" || a.ProtocolVersion != gen || !a.XXLAccessTokenSet {
		t.Fatalf("app as created: %+v", a)
	}
	if b, _ := io.ReadAll(e.raw("GET", "/api/v1/apps/"+app, e.token, nil, nil).Body); strings.Contains(string(b), token) {
		t.Fatalf("GET app shows the access token: %s", b)
	}
	stored := must(e.st.AppGet(ctx, app))(t)
	if strings.Contains(stored.XXLTokenSealed, token) || stored.XXLTokenHash == "" {
		t.Fatalf("the token is stored in the clear: %+v", stored)
	}
	// An update without a token keeps it.
	must(c.PutApp(ctx, app, api.AppRequest{Title: "legacy", Protocol: "xxl-job", ProtocolVersion: gen}))(t)

	admin := e.url
	if gen == "2.x" {
		admin += DefaultXXLContextPath
	}
	var execs []*xxlExecutor
	for range 3 {
		execs = append(execs, newXXLExecutor(t, gen, app, token, admin))
	}
	slices.SortFunc(execs, func(a, b *xxlExecutor) int { return strings.Compare(a.url(), b.url()) })
	urls := []string{execs[0].url(), execs[1].url(), execs[2].url()}
	byURL := func(u string) *xxlExecutor {
		for _, x := range execs {
			if x.url() == u {
				return x
			}
		}
		t.Fatalf("no executor at %s", u)
		return nil
	}

	// A wrong or missing token is refused; the right one registers.
	for _, tok := range []string{"", "wrong-token", token + "x"} {
		if code, msg := execs[0].registry(false, tok); code != 500 || msg != "The access token is wrong." {
			t.Fatalf("registry with token %q: %d %q, want 500 The access token is wrong.", tok, code, msg)
		}
	}
	if n := len(must(c.ListExecutors(ctx, app, api.ListOptions{}))(t).Items); n != 0 {
		t.Fatalf("%d executors listed after refused registrations", n)
	}
	for _, x := range execs {
		if code, msg := x.registry(false, token); code != 200 {
			t.Fatalf("registry: %d %q", code, msg)
		}
	}
	var listed []string
	for _, in := range must(c.ListExecutors(ctx, app, api.ListOptions{}))(t).Items {
		listed = append(listed, in.Address)
	}
	if !slices.Equal(listed, urls) {
		t.Fatalf("executors listed %v, want %v", listed, urls)
	}
	// They stay live past the server's own threshold (3 × its 3 s beat): XXL-JOB beats every
	// 30 s, so an instance is gone after 90 s of silence.
	live := must(e.st.RegistryLive(ctx, app, time.Millisecond))(t)
	if len(live) != 3 || live[0].LiveFor != 90*time.Second {
		t.Fatalf("live within 1 ms: %v, want the 3 executors with their own 90 s threshold", live)
	}

	job := func(routing, handler string, tune func(*store.Job)) int64 {
		return e.remoteJob(app, routing, func(j *store.Job) {
			j.Name = fmt.Sprintf("%s-%s-%d", routing, handler, time.Now().UnixNano())
			j.Handler, j.Params = handler, "p-"+routing
			if tune != nil {
				tune(j)
			}
		})
	}
	run := func(id int64, states ...string) api.Execution {
		t.Helper()
		var x api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(id)+"/run", nil, 202, &x)
		return e.await(x.ID, states...)
	}

	t.Run("trigger fields and output", func(t *testing.T) {
		id := job("first", "demoJobHandler", func(j *store.Job) {
			j.Concurrency, j.TimeoutMs = store.ConcurrencyDiscard, 1500
		})
		x := run(id, "succeeded")
		if x.ExecutorAddress != urls[0] {
			t.Fatalf("first ran on %s, want %s", x.ExecutorAddress, urls[0])
		}
		p := execs[0].triggerOf(x.ID)
		want := map[string]any{"jobId": float64(id), "executorHandler": "demoJobHandler", "executorParams": "p-first",
			"executorBlockStrategy": "DISCARD_LATER", "executorTimeout": float64(2), "glueType": "BEAN",
			"broadcastIndex": float64(0), "broadcastTotal": float64(1)}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("trigger %s = %v, want %v (%v)", k, p[k], v, p)
			}
		}
		if num(p["logDateTime"]) == 0 {
			t.Errorf("trigger without logDateTime: %v", p)
		}
		out := e.output(x.ID)
		if len(out) != 4 || !containsLine(out, "XXL-JOB, Hello World.") || !containsLine(out, "execute end(finish)") {
			t.Fatalf("exec logs %d: %q, want the executor's 4 log lines", x.ID, out)
		}
	})

	t.Run("run-now params", func(t *testing.T) {
		id := job("first", "demoJobHandler", nil)
		var x api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(id)+"/run", api.RunRequest{Params: "p-now"}, 202, &x)
		x = e.await(x.ID, "succeeded")
		if p := byURL(x.ExecutorAddress).triggerOf(x.ID); p["executorParams"] != "p-now" {
			t.Fatalf("trigger of a run with its own params: %v, want executorParams p-now", p)
		}
	})

	t.Run("workflow input in the job param", func(t *testing.T) {
		id := job("first", "demoJobHandler", nil)
		must(c.CreateWorkflow(ctx, api.WorkflowRequest{Name: fmt.Sprintf("xxl-%d", id),
			Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"n","job_id":%d}]}`, id))}))(t)
		run := must(c.RunWorkflow(ctx, fmt.Sprintf("xxl-%d", id), json.RawMessage(`{"day":"mon"}`)))(t)
		x := e.await(run.Nodes[0].ExecutionID, "succeeded")
		var in struct {
			RunID     int64          `json:"run_id"`
			Node      string         `json:"node"`
			Params    map[string]any `json:"params"`
			JobParams string         `json:"job_params"`
		}
		raw, _ := byURL(x.ExecutorAddress).triggerOf(x.ID)["executorParams"].(string)
		if err := json.Unmarshal([]byte(raw), &in); err != nil || in.RunID != run.ID || in.Node != "n" || in.Params["day"] != "mon" || in.JobParams != "p-first" {
			t.Fatalf("executorParams %q (%v): want the workflow input with the job's params", raw, err)
		}
	})

	t.Run("routing", func(t *testing.T) {
		for _, c := range []struct {
			routing string
			want    []string
		}{
			{"last", []string{urls[2], urls[2]}},
			{"round_robin", []string{urls[0], urls[1], urls[2], urls[0]}},
			{"failover", []string{urls[0], urls[0]}},
			{"LEAST_FREQUENTLY_USED", nil}, // XXL-JOB's own name; each instance once
		} {
			id := job(c.routing, "demoJobHandler", nil)
			var got []string
			n := len(c.want)
			if n == 0 {
				n = 3
			}
			for range n {
				x := run(id, "succeeded")
				if byURL(x.ExecutorAddress).triggerOf(x.ID) == nil {
					t.Fatalf("%s: execution %d names %s, which got no trigger for it", c.routing, x.ID, x.ExecutorAddress)
				}
				got = append(got, x.ExecutorAddress)
			}
			if c.want == nil {
				c.want, got = urls, slices.Sorted(slices.Values(got))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("%s ran on %v, want %v", c.routing, got, c.want)
			}
		}
	})

	t.Run("sharding broadcast", func(t *testing.T) {
		id := job("sharding_broadcast", "demoJobHandler", nil)
		var x api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(id)+"/run", nil, 202, &x)
		eventually(t, "3 shards to succeed", func() bool {
			xs := e.jobExecutions(id)
			return len(xs) == 3 && !slices.ContainsFunc(xs, func(x api.Execution) bool { return x.State != "succeeded" })
		})
		for _, s := range e.jobExecutions(id) {
			p := byURL(s.ExecutorAddress).triggerOf(s.ID)
			i := int(num(p["broadcastIndex"]))
			if p == nil || num(p["broadcastTotal"]) != 3 || s.ExecutorAddress != urls[i] {
				t.Fatalf("shard execution %d on %s: trigger %v, want shard i of 3 on the i-th executor", s.ID, s.ExecutorAddress, p)
			}
			if out := e.output(s.ID); !containsLine(out, fmt.Sprintf("shard %d/3", i)) {
				t.Fatalf("exec logs of shard %d: %q", i, out)
			}
		}
	})

	t.Run("script", func(t *testing.T) {
		id := job("first", "shell", func(j *store.Job) { j.Params = "echo from a script" })
		v := &store.ScriptVersion{JobID: id, Script: "echo from a script", Note: "first"}
		if err := e.st.ScriptVersionAdd(ctx, v); err != nil {
			t.Fatal(err)
		}
		x := run(id, "succeeded")
		p := execs[0].triggerOf(x.ID)
		if p["glueType"] != "GLUE_SHELL" || p["glueSource"] != "echo from a script" || p["executorHandler"] != "" ||
			int64(num(p["glueUpdatetime"])) != v.CreatedAt {
			t.Fatalf("script trigger %v, want GLUE_SHELL with the script and its version's time %d", p, v.CreatedAt)
		}
		if out := e.output(x.ID); !containsLine(out, "script: echo from a script") {
			t.Fatalf("exec logs: %q", out)
		}
	})

	t.Run("failure", func(t *testing.T) {
		x := run(job("first", "failingHandler", nil), "failed")
		if x.HandleMsg != "job failed on purpose" || x.HandleCode != 500 {
			t.Fatalf("failed run: %d %q", x.HandleCode, x.HandleMsg)
		}
		if out := e.output(x.ID); !containsLine(out, "about to fail") {
			t.Fatalf("exec logs of a failed run: %q", out)
		}
	})

	t.Run("busy-over, live output, kill", func(t *testing.T) {
		id := job("busy_over", "blockingHandler", nil)
		var first, second api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(id)+"/run", nil, 202, &first)
		// The output is pulled while the run goes on.
		eventually(t, "live output of the blocking run", func() bool { return containsLine(e.output(first.ID), "blocking until killed") })
		if x := e.execution(first.ID); x.State != "running" || x.ExecutorAddress != urls[0] {
			t.Fatalf("blocking run: %s on %s, want running on %s", x.State, x.ExecutorAddress, urls[0])
		}
		// Busy-over passes the executor busy with the job.
		e.call("POST", "/api/v1/jobs/"+itoa(id)+"/run", nil, 202, &second)
		eventually(t, "the second run to start", func() bool { return containsLine(e.output(second.ID), "blocking until killed") })
		if x := e.execution(second.ID); x.ExecutorAddress != urls[1] {
			t.Fatalf("busy-over sent the second run to %s, want %s (the first is busy)", x.ExecutorAddress, urls[1])
		}
		// `sundial exec logs -f` follows the run to its end.
		followed := make(chan []string, 1)
		go func() {
			var lines []string
			_, _ = c.FollowOutput(ctx, first.ID, 0, func(ev api.OutputEvent) error {
				if ev.Line != nil {
					lines = append(lines, ev.Line.Message)
				}
				return nil
			})
			followed <- lines
		}()
		killed := must(c.KillExecution(ctx, first.ID))(t)
		if killed.State != "canceled" || !strings.Contains(killed.HandleMsg, "killed") {
			t.Fatalf("killed run: %s %q", killed.State, killed.HandleMsg)
		}
		if !slices.Contains(execs[0].killedJobs(), id) {
			t.Fatalf("executor got no kill of job %d: %v", id, execs[0].killedJobs())
		}
		select {
		case lines := <-followed:
			if !containsLine(lines, "blocking until killed") {
				t.Fatalf("followed output %q", lines)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("following the killed run's output did not end")
		}
		// The executor's own "killed" callback comes late: the run has ended, nothing changes.
		eventually(t, "the executor's killed callback", func() bool { return execs[0].calledBack(first.ID) })
		if x := e.execution(first.ID); x.State != "canceled" || x.HandleMsg != killed.HandleMsg {
			t.Fatalf("after the executor's callback: %s %q, want it unchanged (%q)", x.State, x.HandleMsg, killed.HandleMsg)
		}

		// A run declared lost (its executor went silent) takes a late success as a late result.
		lost := must(e.st.ExecutionsLoseOnExecutor(ctx, app, urls[1]))(t)
		if len(lost) != 1 || lost[0].ID != second.ID {
			t.Fatalf("lost %v, want execution %d", lost, second.ID)
		}
		execs[1].release(id)
		eventually(t, "the late callback", func() bool { return execs[1].calledBack(second.ID) })
		if x := e.execution(second.ID); x.State != "succeeded" || !strings.HasSuffix(x.HandleMsg, engine.LateSuffix) {
			t.Fatalf("late result: %s %q, want succeeded, marked late", x.State, x.HandleMsg)
		}
	})

	t.Run("callbacks that change nothing", func(t *testing.T) {
		x := run(job("first", "demoJobHandler", nil), "succeeded")
		// Sent again (executors retry from their files), and with another outcome.
		for range 2 {
			if code, msg := execs[0].callback(x.ID, 500, "again"); code != 200 {
				t.Fatalf("duplicate callback: %d %q, want 200", code, msg)
			}
		}
		if got := e.execution(x.ID); got.State != "succeeded" || got.HandleMsg != x.HandleMsg {
			t.Fatalf("after duplicate callbacks: %s %q", got.State, got.HandleMsg)
		}
		if code, msg := execs[0].callback(987654321, 200, ""); code != 200 {
			t.Fatalf("callback for an unknown log id: %d %q, want 200", code, msg)
		}
		// A wrong token is refused, and changes nothing either.
		y := e.execution(x.ID)
		if code, msg := execs[0].callbackWith("wrong-token", x.ID, 500, "forged"); code != 500 || msg != "The access token is wrong." {
			t.Fatalf("callback with a wrong token: %d %q", code, msg)
		}
		if got := e.execution(x.ID); got.HandleMsg != y.HandleMsg {
			t.Fatalf("a refused callback changed the run: %q", got.HandleMsg)
		}
	})

	t.Run("registryRemove", func(t *testing.T) {
		if code, msg := execs[2].registry(true, token); code != 200 {
			t.Fatalf("registryRemove: %d %q", code, msg)
		}
		if n := len(must(c.ListExecutors(ctx, app, api.ListOptions{}))(t).Items); n != 2 {
			t.Fatalf("%d executors after one left, want 2", n)
		}
	})
}

// await polls the execution until its state is one of states.
func (e *env) await(id int64, states ...string) api.Execution {
	e.t.Helper()
	var x api.Execution
	eventually(e.t, fmt.Sprintf("execution %d to be %v", id, states), func() bool {
		x = e.execution(id)
		return slices.Contains(states, x.State)
	})
	return x
}

// TestXXLAppNeedsSecretKey: without --secret-key the server cannot keep an xxl-job token
// sealed, and refuses to keep it at all; with a context path of its own the admin API moves.
func TestXXLAppNeedsSecretKey(t *testing.T) {
	e := newEnvWith(t, "sqlite", func(c *Config) { c.XXLContextPath = "/jobs-admin/" })
	ctx := context.Background()
	_, err := e.client().PutApp(ctx, "legacy", api.AppRequest{Protocol: "xxl-job", ProtocolVersion: "3.3", XXLAccessToken: "a-token-of-the-executors"})
	if api.StatusOf(err) != 409 {
		t.Fatalf("xxl-job token without a secret key: %v, want 409", err)
	}
	if _, err := e.st.AppGet(ctx, "legacy"); err == nil {
		t.Fatal("the app was stored anyway")
	}
	// The admin API answers under the configured path and at /, not under the default one.
	for path, served := range map[string]bool{"/jobs-admin/api/registry": true, "/api/registry": true, "/xxl-job-admin/api/registry": false} {
		resp := e.raw("POST", path, "", nil, map[string]string{"registryGroup": "EXECUTOR", "registryKey": "legacy", "registryValue": "http://127.0.0.1:1/"})
		b, _ := io.ReadAll(resp.Body)
		// No token (and no such app): XXL-JOB's refusal, where the API is served.
		if got := strings.Contains(string(b), `"msg":"The access token is wrong."`); got != served {
			t.Errorf("POST %s: %d %.80s; want the XXL-JOB admin API there: %v", path, resp.StatusCode, b, served)
		}
	}
}

// TestXXLTokenRules: an xxl-job app's access token has the native executor token's minimum
// length, and no two apps share one (a callback is taken for the app whose token it carries):
// refused with 400 and 409 (a token taken, also by two apps racing for it: exactly one wins)
// naming xxl_access_token; an app keeps or re-sets its own.
func TestXXLTokenRules(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newXXLEnv(t, dialect)
		c, ctx := e.client(), context.Background()
		put := func(app, token string) error {
			_, err := c.PutApp(ctx, app, api.AppRequest{Protocol: "xxl-job", ProtocolVersion: "3.3", XXLAccessToken: token})
			return err
		}
		wantField := func(what string, err error, status ...int) *api.Error {
			t.Helper()
			ae := wantStatus(t, what, err, append(status, http.StatusBadRequest)[0])
			if ae.Field != "xxl_access_token" {
				t.Fatalf("%s: field %q, want xxl_access_token", what, ae.Field)
			}
			return ae
		}
		wantField("a 1-character token", put("alpha", "x"))
		wantField("a 15-character token", put("alpha", strings.Repeat("x", sundial.MinTokenLen-1)))
		shared := "the-alpha-executors-token"
		if err := put("alpha", shared); err != nil {
			t.Fatal(err)
		}
		if ae := wantField("beta taking alpha's token", put("beta", shared), http.StatusConflict); !strings.Contains(ae.Message, "alpha") {
			t.Fatalf("beta taking alpha's token: %q, want it to name alpha", ae.Message)
		}
		if _, err := c.GetApp(ctx, "beta"); !api.IsNotFound(err) {
			t.Fatalf("the refused app was stored: %v", err)
		}
		if err := put("alpha", shared); err != nil {
			t.Fatalf("alpha setting its own token again: %v", err)
		}
		if err := put("alpha", ""); err != nil {
			t.Fatalf("alpha keeping its token: %v", err)
		}
		if err := put("beta", "the-beta-executors-token"); err != nil {
			t.Fatal(err)
		}
		// Two new apps racing for one token: the database's key lets exactly one have it.
		errs := make([]error, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = put(fmt.Sprintf("racer%d", i), "the-racers-one-token")
			}()
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("two apps racing for one token: errors %v, want exactly one to win", errs)
		}
		for i, err := range errs {
			if err != nil {
				wantField(fmt.Sprintf("racer%d losing", i), err, http.StatusConflict)
				if _, err := c.GetApp(ctx, fmt.Sprintf("racer%d", i)); !api.IsNotFound(err) {
					t.Fatalf("the losing app was stored: %v", err)
				}
			}
		}
	})
}
