package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// TestBusyExecutorRunsWait: an executor holding as many runs as it may (MaxRuns 1) answers
// the next run busy; the run waits on the server, running and offered again every heartbeat,
// and runs once the slot is free: neither failed nor run twice.
func TestBusyExecutorRunsWait(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		release := make(chan struct{})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		started := make(chan int64, 4)
		ex, err := executor.New(executor.Config{Server: e.url, Token: execToken, App: "billing", Transport: executor.TransportStream,
			SpoolDir: t.TempDir(), MaxRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		ex.Handle("report", func(ctx context.Context) error {
			run, _ := executor.RunFrom(ctx)
			started <- run.ExecutionID
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err := ex.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { free(); _ = ex.Stop(context.Background()) })

		job := e.remoteJob("billing", "round_robin", nil)
		var first, second api.Execution
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &first)
		if id := receive(t, started, "the first run to start"); id != first.ID {
			t.Fatalf("run %d started, want %d", id, first.ID)
		}
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &second)
		eventually(t, "the second run to wait for the busy executor", func() bool { return e.srv.remote.Stats().Waiting.Load() == 1 })
		if x := e.execution(second.ID); x.State != "running" {
			t.Fatalf("the run answered busy: %s %q, want it running, waiting on the server", x.State, x.HandleMsg)
		}
		free()
		if id := receive(t, started, "the second run to start once the slot is free"); id != second.ID {
			t.Fatalf("run %d started, want %d", id, second.ID)
		}
		for _, id := range []int64{first.ID, second.ID} {
			eventually(t, "both runs to succeed", func() bool { return e.execution(id).State == "succeeded" })
		}
		select {
		case id := <-started:
			t.Fatalf("run %d started again", id)
		default:
		}
		if n := e.srv.remote.Stats().Busy.Load(); n != 0 {
			t.Fatalf("%d fires counted failed as busy, want none", n)
		}
	})
}

// TestUnansweredRunLeftToHeartbeats: a run whose stream closes after it went down and before
// the executor answered is not failed (the executor may have taken it): it stays running,
// recorded for that instance, and the result the executor reports once it dialled again
// completes it.
func TestUnansweredRunLeftToHeartbeats(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		cred := credential(e, "billing")
		me := inst("taker")
		reg := map[string]any{"app": "billing", "address": wire.StreamAddress(me), "instance": me, "handlers": []string{"report"}}
		s, x := e.takeOneRun(t, cred, reg)
		s.c.Close(websocket.StatusGoingAway, "gone before answering")
		eventually(t, "the dispatcher to give up on an answer", func() bool {
			return e.srv.remote.Stats().Unanswered.Load() == 1 || e.execution(x.ID).State != "running"
		})
		got := e.execution(x.ID)
		if got.State != "running" || got.ExecutorAddress != wire.StreamAddress(me) {
			t.Fatalf("the unanswered run: %s at %q (%q), want it running, recorded for the executor", got.State, got.ExecutorAddress, got.HandleMsg)
		}

		// The executor dials again, lists the run it holds, and reports it.
		s, _ = e.dialStream(cred, "billing", me)
		reg["held"] = []int64{x.ID}
		if r := s.call(wire.PathRegister, reg); r.Status != http.StatusOK {
			t.Fatalf("register again: %d %s", r.Status, r.Body)
		}
		now := time.Now().UnixMilli()
		if r := s.call(wire.PathResults, result(x.ID, now, now)); r.Status != http.StatusOK {
			t.Fatalf("result: %d %s", r.Status, r.Body)
		}
		if got := e.execution(x.ID); got.State != "succeeded" || strings.Contains(got.HandleMsg, "late") {
			t.Fatalf("after its result: %s %q, want succeeded in time", got.State, got.HandleMsg)
		}
	})
}

// TestOutputComesWithTheResult: output lines an executor could not deliver while its run
// lasted come with the run's result; the server stores them before it applies the result,
// refuses a bad line number naming the field (storing nothing of that request), and stores
// a line sent again once.
func TestOutputComesWithTheResult(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		cred := credential(e, "billing")
		me := inst("teller")
		s, x := e.takeOneRun(t, cred, map[string]any{"app": "billing", "address": wire.StreamAddress(me),
			"instance": me, "handlers": []string{"report"}})
		now := time.Now().UnixMilli()
		withLines := func(lines ...map[string]any) map[string]any {
			body := result(x.ID, now, now)
			body["results"].([]map[string]any)[0]["lines"] = lines
			return body
		}
		line := func(n int) map[string]any {
			return map[string]any{"line": n, "at": now, "message": fmt.Sprintf("said while the server was away %d", n)}
		}
		r := s.call(wire.PathResults, withLines(line(1), map[string]any{"line": 0, "at": now, "message": "numbered 0"}))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "results[0].lines[1].line") {
			t.Fatalf("a result with line 0: %d %s, want 400 naming results[0].lines[1].line", r.Status, r.Body)
		}
		if lines, err := e.st.ExecutionLogList(context.Background(), x.ID, 0, 10); err != nil || len(lines) != 0 || e.execution(x.ID).State != "running" {
			t.Fatalf("after the refused result: %d lines (%v), state %s; want none stored, still running", len(lines), err, e.execution(x.ID).State)
		}
		// Line 1 also came through the stream's output call before the server went away.
		if r := s.call(wire.PathLogs, map[string]any{"execution_id": x.ID, "lines": []map[string]any{line(1)}}); r.Status != http.StatusNoContent {
			t.Fatalf("output: %d %s", r.Status, r.Body)
		}
		if r := s.call(wire.PathResults, withLines(line(1), line(2), line(3))); r.Status != http.StatusOK {
			t.Fatalf("result with lines: %d %s", r.Status, r.Body)
		}
		lines, err := e.st.ExecutionLogList(context.Background(), x.ID, 0, 10)
		if err != nil || len(lines) != 3 {
			t.Fatalf("lines of the run: %+v (%v), want 3", lines, err)
		}
		for i, l := range lines {
			if l.Line != int64(i+1) || l.Message != line(i + 1)["message"] {
				t.Errorf("line %d: %+v", i, l)
			}
		}
		if got := e.execution(x.ID); got.State != "succeeded" {
			t.Errorf("after its result: %s, want succeeded", got.State)
		}
	})
}

// takeOneRun opens a raw stream with cred as the instance reg names, registers it with reg,
// and runs a new job of reg's app now: it returns the stream and the run, read off it.
func (e *env) takeOneRun(t *testing.T, cred string, reg map[string]any) (*rawStream, api.Execution) {
	t.Helper()
	app, me := reg["app"].(string), reg["instance"].(string)
	s, status := e.dialStream(cred, app, me)
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("stream: %d", status)
	}
	if r := s.call(wire.PathRegister, reg); r.Status != http.StatusOK {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	job := e.remoteJob(app, "round_robin", nil)
	var x api.Execution
	e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &x)
	if run := s.nextRun(); run.ExecutionID != x.ID {
		t.Fatalf("run %d came down the stream, want %d", run.ExecutionID, x.ID)
	}
	return s, x
}

// nextRun reads the stream until a frame of calls comes down, and returns the run it carries.
func (s *rawStream) nextRun() wire.RunRequest {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, data, err := s.c.Read(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		var f wire.StreamFrame
		if err := json.Unmarshal(data, &f); err != nil {
			s.t.Fatal(err)
		}
		if f.Calls == "" {
			continue
		}
		var calls []wire.StreamCall
		if err := json.Unmarshal([]byte(f.Calls), &calls); err != nil {
			s.t.Fatal(err)
		}
		for _, c := range calls {
			var run wire.RunRequest
			if c.Path == wire.PathRun && json.Unmarshal([]byte(c.Body), &run) == nil {
				return run
			}
		}
	}
}

// receive waits for a value on c.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// TestStreamPingsKeepExecutorLive: the node holding an executor's stream vouches for it while
// its pings come. An instance that registered once and then only pings (its beats stuck, say,
// behind a slow database) stays live past the silence threshold of 3 heartbeat intervals, its
// registry row touched by the node; once the pings stop with the stream still open (a frozen
// process), it goes silent and is swept.
func TestStreamPingsKeepExecutorLive(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		const beat = 300 * time.Millisecond
		e := newExecutorEnv(t, dialect, beat)
		cred := credential(e, "billing")
		me := inst("pinger")
		s, status := e.dialStream(cred, "billing", me)
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("stream: %d", status)
		}
		if r := s.call(wire.PathRegister, map[string]any{"app": "billing", "address": wire.StreamAddress(me), "instance": me,
			"handlers": []string{"report"}}); r.Status != http.StatusOK {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		row := func(within time.Duration) *store.Instance {
			live, err := e.st.RegistryLive(context.Background(), "billing", within)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range live {
				if in.Instance == me {
					return in
				}
			}
			return nil
		}
		registered := row(time.Hour)
		if registered == nil {
			t.Fatal("the instance is not registered")
		}
		// The pong comes by a read: the stream is read in the background from now on (no
		// frame comes down it: the app has no job).
		ctx := s.c.CloseRead(context.Background())
		pings := time.NewTicker(beat) // the executor's pace
		defer pings.Stop()
		give := time.Now().Add(30 * time.Second)
		for in := row(time.Hour); in == nil || in.LastSeen < registered.RegisteredAt+(4*beat).Milliseconds(); in = row(time.Hour) {
			if in == nil || time.Now().After(give) {
				t.Fatalf("pinging for %v: the instance's row is %+v, want it seen 4 intervals after it registered", time.Since(give.Add(-30*time.Second)), in)
			}
			<-pings.C
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := s.c.Ping(pctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		if row(3*beat) == nil {
			t.Fatal("vouched for, the instance is not live")
		}
		pings.Stop()
		eventually(t, "the silent instance to be swept", func() bool { return row(time.Hour) == nil })
	})
}
