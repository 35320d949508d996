package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// streamExecutor starts a real SDK executor of app on the stream transport, with credential.
func (e *env) streamExecutor(app, credential, name string, handler func(context.Context) error) *executor.Executor {
	e.t.Helper()
	ex, err := executor.New(executor.Config{Server: e.url, Token: credential, App: app, Transport: executor.TransportStream,
		SpoolDir: e.t.TempDir()})
	if err != nil {
		e.t.Fatal(err)
	}
	ex.Handle(name, handler)
	if err := ex.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex
}

// TestStreamRunsAndResults: an executor on the stream transport listens on nothing, registers
// its stream address, takes a run down the stream and reports its output and result up it.
func TestStreamRunsAndResults(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		ex := e.streamExecutor("billing", execToken, "report", func(ctx context.Context) error {
			executor.Logger(ctx).Info("over the stream")
			return nil
		})
		if !strings.HasPrefix(ex.Address(), wire.StreamScheme) || ex.StreamsOpen() != 1 {
			t.Fatalf("address %q, %d streams open; want a stream address and 1", ex.Address(), ex.StreamsOpen())
		}
		var job api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "report", "handler": "report", "app": "billing",
			"routing": "round_robin", "triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, &job)
		run := e.onlyRunSucceeded(job.ID)
		if x := e.execution(run.ID); x.ExecutorAddress != ex.Address() {
			t.Errorf("ran on %q, want %q", x.ExecutorAddress, ex.Address())
		}
		var out struct {
			Lines []struct {
				Message string `json:"message"`
			} `json:"items"`
		}
		eventually(t, "the output line", func() bool {
			e.call("GET", "/api/v1/executions/"+itoa(run.ID)+"/output", nil, 200, &out)
			return len(out.Lines) > 0
		})
		if !strings.Contains(out.Lines[0].Message, "over the stream") {
			t.Errorf("output %+v", out.Lines)
		}
	})
}

// rawStream is a stream opened by hand with a credential, as an attacker holding one would.
type rawStream struct {
	t    *testing.T
	c    *websocket.Conn
	next uint64
}

// dialStream opens a stream as app's instance (made by inst) with credential; it returns
// the HTTP status when the opening is refused.
func (e *env) dialStream(credential, app, instance string) (*rawStream, int) {
	e.t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+credential)
	h.Set(wire.HeaderApp, app)
	h.Set(wire.HeaderInstance, instance)
	instanceKey(instance).Prove(&http.Request{Method: http.MethodGet, Header: h}, wire.PathStream, nil, app, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.url+wire.PathStream, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{wire.StreamSubprotocol}})
	if err != nil {
		if resp == nil {
			e.t.Fatal(err)
		}
		return nil, resp.StatusCode
	}
	e.t.Cleanup(func() { c.CloseNow() })
	return &rawStream{t: e.t, c: c}, http.StatusSwitchingProtocols
}

// call sends one call up the stream and returns its reply; it fails the test when a frame
// of calls (a run) comes down meanwhile.
func (s *rawStream) call(path string, body any) wire.StreamReply {
	s.t.Helper()
	s.next++
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.send(ctx, wire.StreamCall{ID: s.next, Path: path, Body: wire.RawJSON(b)})
	for {
		_, data, err := s.c.Read(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		var f wire.StreamFrame
		if err := json.Unmarshal(data, &f); err != nil {
			s.t.Fatal(err)
		}
		if f.Calls != "" {
			s.t.Fatalf("calls came down another app's stream: %s", f.Calls)
		}
		for _, r := range f.Replies {
			if r.ID == s.next {
				return r
			}
		}
	}
}

// send writes calls up the stream in one frame.
func (s *rawStream) send(ctx context.Context, calls ...wire.StreamCall) {
	s.t.Helper()
	cb, _ := json.Marshal(calls)
	frame, _ := json.Marshal(wire.StreamFrame{Calls: wire.RawJSON(cb)})
	if err := s.c.Write(ctx, websocket.MessageText, frame); err != nil {
		s.t.Fatal(err)
	}
}

// TestStreamTrust: a stream is bound to the app of its credential and to its proven
// instance. Opened with alpha's credential it cannot name beta (403), register into beta
// (403) or at beta's instance's stream address (400), report a result or output of beta's
// running run (403; the run stays running), and receives none of beta's runs, which run on
// beta's streamed executor. When alpha's credential is revoked, its stream is closed.
func TestStreamTrust(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, 300*time.Millisecond)
		alphaCred, betaCred := credential(e, "alpha"), credential(e, "beta")
		release := make(chan struct{})
		started := make(chan int64, 4)
		beta := e.streamExecutor("beta", betaCred, "report", func(ctx context.Context) error {
			run, _ := executor.RunFrom(ctx)
			started <- run.ExecutionID
			<-release
			return nil
		})

		if _, status := e.dialStream(alphaCred, "beta", inst("mallory")); status != http.StatusForbidden {
			t.Fatalf("a stream naming beta with alpha's credential: %d, want 403", status)
		}
		s, status := e.dialStream(alphaCred, "alpha", inst("mallory"))
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("alpha's stream: %d", status)
		}
		if r := s.call(wire.PathRegister, map[string]any{"app": "beta", "address": wire.StreamAddress(inst("mallory")),
			"instance": inst("mallory"), "handlers": []string{"report"}}); r.Status != http.StatusForbidden {
			t.Fatalf("register into beta over alpha's stream: %d %s, want 403", r.Status, r.Body)
		}
		if r := s.call(wire.PathRegister, map[string]any{"app": "alpha", "address": beta.Address(),
			"instance": inst("mallory"), "handlers": []string{"report"}}); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "address") {
			t.Fatalf("register at beta's stream address: %d %s, want 400 naming address", r.Status, r.Body)
		}
		if r := s.call(wire.PathRegister, map[string]any{"app": "alpha", "address": wire.StreamAddress(inst("mallory")),
			"instance": inst("mallory"), "handlers": []string{"report"}}); r.Status != http.StatusOK {
			t.Fatalf("alpha's own registration: %d %s", r.Status, r.Body)
		}

		job := e.remoteJob("beta", "round_robin", nil)
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		id := <-started
		now := time.Now().UnixMilli()
		forged := result(id, now, now)
		forged["results"].([]map[string]any)[0]["lines"] = []map[string]any{{"line": 2, "at": now, "message": "planted with a result"}}
		if r := s.call(wire.PathResults, forged); r.Status != http.StatusForbidden {
			t.Fatalf("alpha's stream reporting beta's run: %d %s, want 403", r.Status, r.Body)
		}
		if r := s.call(wire.PathLogs, map[string]any{"execution_id": id, "lines": []map[string]any{{"line": 1, "at": now, "message": "planted"}}}); r.Status != http.StatusForbidden {
			t.Fatalf("alpha's stream writing beta's output: %d %s, want 403", r.Status, r.Body)
		}
		if x := e.execution(id); x.State != "running" || x.ExecutorAddress != beta.Address() {
			t.Fatalf("beta's run after alpha's reports: %+v", x)
		}
		close(release)
		eventually(t, "beta's run to succeed", func() bool { return e.execution(id).State == "succeeded" })
		if lines, err := e.st.ExecutionLogList(context.Background(), id, 0, 10); err != nil || len(lines) != 0 {
			t.Fatalf("beta's run's output: %+v (%v), want none of alpha's lines", lines, err)
		}

		// Revoked: the stream is closed by the server (policy violation).
		e.call("DELETE", "/api/v1/apps/alpha/credentials", nil, 204, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			_, _, err := s.c.Read(ctx)
			if err == nil {
				continue
			}
			if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
				t.Fatalf("alpha's stream after the revocation: %v (close status %d), want closed for policy violation", err, st)
			}
			break
		}
		if _, status := e.dialStream(alphaCred, "alpha", inst("mallory")); status != http.StatusUnauthorized {
			t.Fatalf("a stream with the revoked credential: %d, want 401", status)
		}
	})
}

// TestStreamReadsWhileCallsWait: the database holds an executor's beats (another connection
// holds the lock of its registry row, as a database too busy to take them would), and the
// executor sends more beats over its stream than the stream serves and queues at once. The
// node keeps reading the stream meanwhile: it answers a ping while every beat waits, answers
// at once 503 ("send it again") to the calls past its bound, and answers every other call
// once the database takes them.
func TestStreamReadsWhileCallsWait(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		dsn := testdb.DSN(t, dialect)
		e := newEnvOn(t, openDSN(t, dsn), func(c *Config) {
			c.ExecutorToken = execToken
			c.ExecutorHeartbeat = time.Second
			c.Scheduler.HeartbeatInterval = 200 * time.Millisecond
		}, nil)
		cred := credential(e, "alpha")
		s, status := e.dialStream(cred, "alpha", inst("slow-db"))
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("the stream: %d", status)
		}
		addr := wire.StreamAddress(inst("slow-db"))
		beat := map[string]any{"app": "alpha", "address": addr, "instance": inst("slow-db"), "handlers": []string{"report"}}
		if r := s.call(wire.PathRegister, beat); r.Status != http.StatusOK {
			t.Fatalf("the first registration: %d %s", r.Status, r.Body)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, err := openDSN(t, dsn).DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "UPDATE registry SET live_ms = live_ms WHERE address = '"+addr+"'"); err != nil {
			t.Fatal(err)
		}

		const over = 5
		n := streamBeats + streamWaiting + over
		b, _ := json.Marshal(beat)
		calls := make([]wire.StreamCall, n)
		for i := range calls {
			calls[i] = wire.StreamCall{ID: uint64(1000 + i), Path: wire.PathRegister, Body: wire.RawJSON(b)}
		}
		replies := make(chan wire.StreamReply, n)
		go func() {
			for {
				_, data, err := s.c.Read(ctx)
				if err != nil {
					close(replies)
					return
				}
				var f wire.StreamFrame
				if json.Unmarshal(data, &f) == nil {
					for _, r := range f.Replies {
						replies <- r
					}
				}
			}
		}()
		s.send(ctx, calls...)
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		err = s.c.Ping(pctx)
		pcancel()
		if err != nil {
			t.Fatalf("a ping while %d beats wait for the database: %v; want it answered", n, err)
		}
		seen := map[uint64]int{}
		for range over {
			r := <-replies
			if r.Status != http.StatusServiceUnavailable {
				t.Fatalf("while the database holds the beats, call %d was answered %d %s; want only the %d past the bound answered, 503",
					r.ID, r.Status, r.Body, over)
			}
			seen[r.ID]++
		}
		select {
		case r := <-replies:
			t.Fatalf("call %d answered %d %s while the database holds it; want it waiting", r.ID, r.Status, r.Body)
		default:
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		for len(seen) < n {
			r, ok := <-replies
			if !ok {
				t.Fatalf("the stream closed with %d of %d calls answered", len(seen), n)
			}
			if seen[r.ID]++; seen[r.ID] > 1 {
				t.Fatalf("call %d answered twice", r.ID)
			}
			if r.Status != http.StatusOK {
				t.Fatalf("call %d answered %d %s once the database took it; want 200", r.ID, r.Status, r.Body)
			}
		}
	})
}

// TestCallLaneBounds: a lane of one slot holding 2 calls waiting and 100 bytes of bodies
// answers busy the call past either bound, at once, and serves every other once the slot
// frees; a call larger than the byte bound alone is served (a frame's size bounds it).
func TestCallLaneBounds(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		sizes []int
		busy  []int // indexes answered busy
	}{
		{"count", []int{10, 10, 10, 10}, []int{3}},
		{"bytes", []int{60, 50, 40}, []int{1}},
		{"one large call", []int{500}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newCallLane(1, 2, 100)
			release := make(chan struct{})
			var served sync.WaitGroup
			var busy []int
			started := make(chan struct{}, 1)
			for i, size := range c.sizes {
				do := func() {
					defer served.Done()
					started <- struct{}{}
					<-release
				}
				served.Add(1)
				l.serve(ctx, size, do, func() {
					served.Done()
					busy = append(busy, i)
				})
				if i == 0 {
					<-started // the first holds the slot: the rest wait behind it
				}
			}
			if !slices.Equal(busy, c.busy) {
				t.Fatalf("answered busy %v, want %v", busy, c.busy)
			}
			close(release)
			go func() {
				for range started { // the others' starts, once the slot frees
				}
			}()
			served.Wait()
			close(started)
			if n, b := l.waiting.Load(), l.bytes.Load(); n != 0 || b != 0 {
				t.Fatalf("after every call was answered the lane counts %d calls, %d bytes waiting; want 0", n, b)
			}
		})
	}
}
