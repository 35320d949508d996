package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// The life of a run on real executors: kill, timeout, retries, an executor that dies, output
// followed live, and a result that outlives a server restart.

// TestKillEndToEnd: POST /executions/{id}/kill reaches the executor, the handler's context is
// canceled and the execution ends canceled; an executor that does not answer leaves the run
// running with a 502; an ended execution cannot be killed but can be retried.
func TestKillEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})
		job := c.job("first", "hold", nil)
		id := c.fire(job)
		r := c.awaitStart(id)

		c.nodes[0].gate.awaitAnswer() // "first": the run is on node 0
		c.nodes[0].gate.Down()
		if e := c.callErr("POST", "/api/v1/executions/"+itoa(id)+"/kill", nil, http.StatusBadGateway); !strings.Contains(e.Message, r.addr) {
			t.Fatalf("kill with the executor unreachable: %+v, want the executor named", e)
		}
		if x := c.execution(id); x.State != "running" {
			t.Fatalf("after a failed kill the execution is %s, want running", x.State)
		}
		c.nodes[0].gate.Up(c.nodes[0].gate.getTarget())

		var killed api.Execution
		c.call("POST", "/api/v1/executions/"+itoa(id)+"/kill", nil, http.StatusAccepted, &killed)
		if killed.State != "canceled" || !strings.Contains(killed.HandleMsg, "killed") {
			t.Fatalf("killed execution: %+v, want canceled as killed", killed)
		}
		c.callErr("POST", "/api/v1/executions/"+itoa(id)+"/kill", nil, http.StatusConflict)
		c.callErr("POST", "/api/v1/executions/999999/kill", nil, http.StatusNotFound)

		// A person's retry runs it again as the next attempt.
		c.release(job)
		var retry api.Execution
		c.call("POST", "/api/v1/executions/"+itoa(id)+"/retry", nil, http.StatusAccepted, &retry)
		if retry.ID == id || retry.Attempt != 1 || retry.JobID != job {
			t.Fatalf("retry %+v of execution %d", retry, id)
		}
		if x := c.await(retry.ID, "succeeded", "failed"); x.State != "succeeded" {
			t.Fatalf("retry ended %+v", x)
		}
		c.callErr("POST", "/api/v1/executions/999999/retry", nil, http.StatusNotFound)
	})
}

// TestTimeoutAndRetriesEndToEnd: a run over the job's timeout ends timed_out; a failing
// handler is retried max_retries times, each attempt recorded; a retry can succeed.
func TestTimeoutAndRetriesEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})

		slow := c.job("first", "hold", func(j *store.Job) { j.TimeoutMs = 200 })
		x := c.await(c.fire(slow), "timed_out", "succeeded", "failed", "canceled")
		if x.State != "timed_out" || !strings.Contains(x.HandleMsg, "timed out") {
			t.Fatalf("run over its timeout: %+v, want timed_out", x)
		}

		failing := c.job("round_robin", "fail", func(j *store.Job) { j.MaxRetries = 2; j.RetryBackoffMs = 10 })
		c.fire(failing)
		var xs []api.Execution
		eventually(t, "three failed attempts", func() bool {
			xs = c.jobExecutions(failing)
			return len(xs) == 3 && xs[2].State == "failed"
		})
		for i, x := range xs {
			if x.State != "failed" || x.Attempt != i || !strings.Contains(x.HandleMsg, "boom") {
				t.Fatalf("attempt %d: %+v", i, x)
			}
			if _, ran := c.rec(x.ID); !ran {
				t.Fatalf("attempt %d (execution %d) never reached a handler", i, x.ID)
			}
		}
		if xs[1].ExecutorAddress == xs[0].ExecutorAddress {
			t.Fatalf("round-robin retried on the same instance %s", xs[0].ExecutorAddress)
		}
		// No fourth attempt follows the last.
		time.Sleep(100 * time.Millisecond) // a window for a wrong extra retry to show; not synchronisation
		if n := len(c.jobExecutions(failing)); n != 3 {
			t.Fatalf("%d executions after max_retries=2, want 3", n)
		}

		flaky := c.job("first", "fail-once", func(j *store.Job) { j.MaxRetries = 3; j.RetryBackoffMs = 10 })
		c.fire(flaky)
		eventually(t, "the retry to succeed", func() bool {
			xs = c.jobExecutions(flaky)
			return len(xs) == 2 && xs[1].State == "succeeded"
		})
		if xs[0].State != "failed" || xs[1].Attempt != 1 {
			t.Fatalf("flaky job's executions: %+v", xs)
		}
	})
}

// TestExecutorCrashEndToEnd: an executor that vanishes mid-run (its endpoint gone, no more
// heartbeats, no result) is swept after three missed heartbeats; its run becomes lost and is
// retried on another instance, where it succeeds.
func TestExecutorCrashEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{serverHeartbeat: 300 * time.Millisecond, execHeartbeat: 50 * time.Millisecond})
		a := c.addrs()
		job := c.job("first", "hold@"+a[0], func(j *store.Job) { j.MaxRetries = 1; j.RetryBackoffMs = 10 })
		id := c.fire(job)
		if r := c.awaitStart(id); r.addr != a[0] {
			t.Fatalf("ran on %s, want %s", r.addr, a[0])
		}
		c.nodes[0].crash()

		if x := c.await(id, "lost", "succeeded", "failed"); x.State != "lost" {
			t.Fatalf("the run on the crashed executor: %+v, want lost", x)
		}
		var xs []api.Execution
		eventually(t, "the retry to succeed", func() bool {
			xs = c.jobExecutions(job)
			return len(xs) == 2 && xs[1].State == "succeeded"
		})
		if xs[1].Attempt != 1 || xs[1].ExecutorAddress == a[0] || xs[1].ExecutorAddress == "" {
			t.Fatalf("retry %+v, want attempt 1 on another instance than %s", xs[1], a[0])
		}
	})
}

// TestOutputFollowEndToEnd: the output of a run is streamed (server-sent events) while it
// runs, and the stream ends with the execution once it is over.
func TestOutputFollowEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})
		id := c.fire(c.job("first", "stream", nil))
		c.awaitStart(id)

		req, _ := http.NewRequest("GET", c.url+"/api/v1/executions/"+itoa(id)+"/output?follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("follow: %d %s", resp.StatusCode, ct)
		}
		type event struct{ name, data string }
		events := make(chan event, 16)
		go func() {
			defer close(events)
			sc := bufio.NewScanner(resp.Body)
			var ev event
			for sc.Scan() {
				switch l := sc.Text(); {
				case strings.HasPrefix(l, "event: "):
					ev.name = strings.TrimPrefix(l, "event: ")
				case strings.HasPrefix(l, "data: "):
					ev.data = strings.TrimPrefix(l, "data: ")
				case l == "" && ev.name != "":
					events <- ev
					ev = event{}
				}
			}
		}()
		next := func() event {
			t.Helper()
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the stream ended early")
				}
				return ev
			case <-time.After(15 * time.Second):
				t.Fatal("no event within 15 s")
			}
			return event{}
		}
		// waitLine reads events up to the line containing msg.
		waitLine := func(msg string) {
			t.Helper()
			for {
				ev := next()
				if ev.name != "line" {
					t.Fatalf("event %+v before the line %q", ev, msg)
				}
				var l api.LogLine
				if err := json.Unmarshal([]byte(ev.data), &l); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(l.Message, msg) {
					return
				}
			}
		}
		waitLine("first")
		if x := c.execution(id); x.State != "running" {
			t.Fatalf("the first line arrived with the execution %s; want it streamed while running", x.State)
		}
		close(c.step)
		waitLine("second")
		ev := next()
		var end api.Execution
		if err := json.Unmarshal([]byte(ev.data), &end); err != nil || ev.name != "end" || end.State != "succeeded" || end.ID != id {
			t.Fatalf("last event %+v (%v), want end with the succeeded execution", ev, err)
		}
	})
}

// TestResultAfterServerRestart: a run ends while the server is down; the executor spools the
// result, and delivers it to a new server on the same database, where the execution ends
// succeeded.
func TestResultAfterServerRestart(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		dsn := testdb.DSN(t, dialect)
		open := func() *sqlstore.Store { return openDSN(t, dsn) }
		tune := func(c *Config) {
			c.ExecutorToken = execToken
			c.ExecutorHeartbeat = 2 * time.Second // the downtime stays well under three of them
			c.Scheduler.HeartbeatInterval = 200 * time.Millisecond
		}
		first := newEnvOn(t, open(), tune, nil)
		front := newTCPGate(t, strings.TrimPrefix(first.url, "http://")) // the address executors know
		c := &cluster{env: first}
		c.startNodes(t, front.url(), 100*time.Millisecond)

		job := c.job("first", "hold", nil)
		id := c.fire(job)
		c.awaitStart(id)
		front.Down()
		if err := first.srv.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		c.release(job)
		spool := c.nodes[0].spool
		eventually(t, "the result to be spooled", func() bool {
			fs, _ := os.ReadDir(spool)
			return len(fs) > 0
		})

		second := startEnv(t, open(), tune, first)
		front.Up(strings.TrimPrefix(second.url, "http://"))
		c.env = second
		x := c.await(id, "succeeded", "failed", "lost", "canceled")
		if x.State != "succeeded" {
			t.Fatalf("after the restart: %+v, want succeeded", x)
		}
		eventually(t, "the spool to empty", func() bool {
			fs, _ := os.ReadDir(spool)
			return len(fs) == 0
		})
	})
}

// TestUnknownHandlerEndToEnd: a remote job whose handler no executor of its app registered
// fails with the reason, and counts in sundial_remote_dispatch_failures_total{reason="no_handler"}.
func TestUnknownHandlerEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})
		job := c.remoteJob("pool", "first", func(j *store.Job) { j.Handler = "nobody-has-it" })
		x := c.await(c.fire(job), "failed", "succeeded")
		if x.State != "failed" || !strings.Contains(x.HandleMsg, `has handler "nobody-has-it"`) {
			t.Fatalf("run of an unknown handler: %+v", x)
		}
		resp := c.raw("GET", "/metrics", c.token, nil, nil)
		b, _ := io.ReadAll(resp.Body)
		if want := `sundial_remote_dispatch_failures_total{reason="no_handler"} 1`; !strings.Contains(string(b), want) {
			t.Fatalf("metrics lack %s:\n%s", want, grepLines(string(b), "sundial_remote_dispatch"))
		}
	})
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
