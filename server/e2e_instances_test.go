package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// Executor restarts, several servers, late results and kills of in-process runs, end to end
// on real SDK executors over real sockets, on every database.

// soloExecutor is one SDK executor of app "solo" behind a gate (its advertised address), whose
// calls to the servers can be cut. Its handler "work" records the run, then returns at once
// for attempts > 0 and holds attempt 0 until release or the test's end.
type soloExecutor struct {
	ex      *executor.Executor
	client  *cuttable
	started chan executor.Run
}

func startSolo(t *testing.T, gate *tcpGate, servers []string, spool string, release <-chan struct{}) *soloExecutor {
	t.Helper()
	s := &soloExecutor{client: &cuttable{}, started: make(chan executor.Run, 16)}
	done := make(chan struct{})
	for attempt := 0; ; attempt++ {
		listen := freeAddr(t)
		gate.setTarget(listen)
		gate.dropConns() // a restarted process: connections to the old one are gone
		ex, err := executor.New(executor.Config{Servers: servers, Token: execToken, App: "solo",
			Transport: executor.TransportPush, Listen: listen, Advertise: gate.url(), SpoolDir: spool, HeartbeatInterval: 100 * time.Millisecond,
			HTTPClient: &http.Client{Transport: s.client, Timeout: 5 * time.Second}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ex.Handle("work", func(ctx context.Context) error {
			run, _ := executor.RunFrom(ctx)
			s.started <- run
			if run.Attempt > 0 {
				return nil
			}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-done:
				return context.Canceled
			}
		})
		s.ex = ex
		if err = ex.Start(context.Background()); err == nil {
			break
		}
		if attempt == 4 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.ex.Stop(ctx)
	})
	return s
}

func (s *soloExecutor) awaitRun(t *testing.T) executor.Run {
	t.Helper()
	select {
	case r := <-s.started:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no run started on the executor")
		return executor.Run{}
	}
}

// soloJob stores a remote job of app solo with one retry, no backoff.
func soloJob(e *env) int64 {
	return e.remoteJob("solo", "first", func(j *store.Job) {
		j.Handler, j.MaxRetries = "work", 1
	})
}

// TestExecutorRestartLosesOldRuns: an executor restarted on the same address (a new
// instance) makes the runs of the old one lost at once, and they are retried — long before
// the silence sweep (30 s here) would have noticed anything.
func TestExecutorRestartLosesOldRuns(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, 10*time.Second)
		gate := newTCPGate(t, "127.0.0.1:1")
		old := startSolo(t, gate, []string{e.url}, t.TempDir(), nil)
		job := soloJob(e)
		var first api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &first)
		old.awaitRun(t)
		gate.awaitAnswer()

		// The old process dies without a word; a new one comes up on the same address.
		old.client.cut.Store(true)
		fresh := startSolo(t, gate, []string{e.url}, t.TempDir(), nil)
		if fresh.ex.Instance() == old.ex.Instance() {
			t.Fatal("the restarted executor has the old instance id")
		}
		x := e.awaitState(first.ID, "lost")
		if x.Attempt != 0 {
			t.Fatalf("lost execution %+v", x)
		}
		// The retry may be recorded for the old instance (read a moment before the restart):
		// the new one refuses it and it is sent again, recorded for the new one.
		select {
		case r := <-fresh.started:
			if r.Attempt != 1 {
				t.Fatalf("the restarted executor ran attempt %d, want the retry (1)", r.Attempt)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the retry never reached the restarted executor; the job's executions: %+v", e.jobExecutions(job))
		}
		eventually(t, "the retry to succeed", func() bool {
			xs := e.jobExecutions(job)
			return len(xs) == 2 && xs[1].State == "succeeded" && xs[1].Attempt == 1
		})
	})
}

// TestExecutorFailsOverToSecondServer: an executor given two servers keeps working when the
// first stops: its heartbeats and its result go to the second.
func TestExecutorFailsOverToSecondServer(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		tune := func(c *Config) {
			c.ExecutorToken = execToken
			c.ExecutorHeartbeat = 2 * time.Second
			c.Scheduler.HeartbeatInterval = 200 * time.Millisecond
		}
		first := newEnvOn(t, st, tune, nil)
		second := startEnv(t, st, tune, first)
		front := newTCPGate(t, strings.TrimPrefix(first.url, "http://")) // the first server, as the executor knows it
		release := make(chan struct{})
		ex := startSolo(t, newTCPGate(t, "127.0.0.1:1"), []string{front.url(), second.url}, t.TempDir(), release)
		job := soloJob(second)
		var run api.Execution
		second.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &run)
		ex.awaitRun(t)

		front.Down()
		if err := first.srv.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The executor beats to the second server, so the second node's sweeps lose nothing.
		lostBefore := second.srv.sched.Engine().Stats().LostOnExecutor.Load()
		stopped, err := st.DBNow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the executor to beat to the second server", func() bool {
			in, err := st.RegistryLive(context.Background(), "solo", time.Hour)
			return err == nil && len(in) == 1 && in[0].Instance == ex.ex.Instance() && in[0].LastSeen > stopped
		})
		close(release)
		x := second.awaitState(run.ID, "succeeded", "lost", "failed")
		if x.State != "succeeded" || strings.Contains(x.HandleMsg, "late") {
			t.Fatalf("after the first server stopped: %+v, want succeeded in time", x)
		}
		if n := second.srv.sched.Engine().Stats().LostOnExecutor.Load(); n != lostBefore {
			t.Fatalf("%d runs lost on the executor, want none", n-lostBefore)
		}
	})
}

// TestLateResultRecorded: a run declared lost (its executor was cut off past the silence
// threshold) whose result arrives afterwards shows the real outcome, marked late, and
// counts in sundial_executions_late_results_total; the retry the loss started stays.
func TestLateResultRecorded(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, 300*time.Millisecond)
		release := make(chan struct{})
		ex := startSolo(t, newTCPGate(t, "127.0.0.1:1"), []string{e.url}, t.TempDir(), release)
		job := soloJob(e)
		var run api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &run)
		ex.awaitRun(t)

		ex.client.cut.Store(true)
		e.awaitState(run.ID, "lost")
		close(release)
		ex.client.cut.Store(false)
		x := e.awaitState(run.ID, "succeeded")
		if !strings.Contains(x.HandleMsg, "arrived late") {
			t.Fatalf("late result recorded as %+v, want it marked late", x)
		}
		// The counter follows the commit the state above was read from.
		eventually(t, "the late result to be counted", func() bool { return e.srv.sched.Engine().Stats().LateResults.Load() == 1 })
		resp := e.raw("GET", "/metrics", e.token, nil, nil)
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "sundial_executions_late_results_total 1") {
			t.Fatalf("metrics lack the late result:\n%s", grepLines(string(b), "late"))
		}
		if xs := e.jobExecutions(job); len(xs) != 2 || xs[1].Attempt != 1 {
			t.Fatalf("executions %+v: want the lost run and its retry", xs)
		}
	})
}

// TestKillInProcessOnAnotherNode: an in-process run is killed through the API of a node that
// does not run it; it ends canceled.
func TestKillInProcessOnAnotherNode(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		var running atomic.Value // node id
		nodeHandler := func(s *Server) {
			s.Register("sleepy", func(ctx context.Context) error {
				running.Store(s.sched.Engine().NodeID())
				<-ctx.Done()
				return ctx.Err()
			})
		}
		a := newEnvOn(t, st, nil, nodeHandler)
		b := newEnvOn(t, st, nil, nodeHandler)
		b.pw, b.token = a.pw, a.token
		var j api.Job
		a.call("POST", "/api/v1/jobs", map[string]any{"name": "sleepy", "handler": "sleepy"}, 201, &j)
		var run api.Execution
		a.call("POST", "/api/v1/jobs/"+itoa(j.ID)+"/run", nil, 202, &run)
		eventually(t, "the handler to start", func() bool { return running.Load() != nil })
		other := a
		if running.Load() == a.srv.sched.Engine().NodeID() {
			other = b
		}
		var killed api.Execution
		other.call("POST", "/api/v1/executions/"+itoa(run.ID)+"/kill", nil, http.StatusAccepted, &killed)
		x := other.awaitState(run.ID, "canceled", "succeeded", "failed")
		if x.State != "canceled" || !strings.Contains(x.HandleMsg, "killed") {
			t.Fatalf("killed in-process run: %+v, want canceled as killed", x)
		}
	})
}

// awaitState polls the execution until its state is one of states.
func (e *env) awaitState(id int64, states ...string) api.Execution {
	e.t.Helper()
	var x api.Execution
	eventually(e.t, "execution "+itoa(id)+" to be "+strings.Join(states, " or "), func() bool {
		x = e.execution(id)
		for _, s := range states {
			if x.State == s {
				return true
			}
		}
		return false
	})
	return x
}

// dropConns cuts the connections open through the gate and keeps listening.
func (g *tcpGate) dropConns() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		c.Close()
	}
	clear(g.conns)
}
