package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
)

const (
	token = "s3cret-token"
	wait  = 10 * time.Second // bound on every wait for something the executor should do
)

// testLogger writes the executor's own log to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

type setup struct {
	peer *executortest.Peer
	ex   *executor.Executor
	addr string
	dir  string
}

// start runs an executor against a fresh peer; handlers are added by add before Start.
func start(t *testing.T, add func(*executor.Executor)) *setup {
	t.Helper()
	peer := executortest.NewPeer(t, token)
	return startOn(t, peer, t.TempDir(), add)
}

func startOn(t *testing.T, peer *executortest.Peer, dir string, add func(*executor.Executor)) *setup {
	t.Helper()
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if add != nil {
		add(ex)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = ex.Stop(ctx)
	})
	return &setup{peer: peer, ex: ex, addr: ex.Address(), dir: dir}
}

func (s *setup) run(t *testing.T, req wire.RunRequest) wire.RunResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := s.peer.Run(ctx, s.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (s *setup) mustRun(t *testing.T, req wire.RunRequest) {
	t.Helper()
	if resp := s.run(t, req); !resp.Accepted {
		t.Fatalf("run %d refused: %s", req.ExecutionID, resp.Message)
	}
}

func (s *setup) idle(t *testing.T, job int64) bool {
	t.Helper()
	idle, err := s.peer.IdleBeat(context.Background(), s.addr, job)
	if err != nil {
		t.Fatal(err)
	}
	return idle
}

// gate is a handler that reports each start and then blocks until released or canceled.
type gate struct {
	started chan int64
	mu      sync.Mutex
	release map[int64]chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan int64, 100), release: map[int64]chan struct{}{}}
}

func (g *gate) ch(id int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.release[id]
	if c == nil {
		c = make(chan struct{})
		g.release[id] = c
	}
	return c
}

func (g *gate) open(id int64) { close(g.ch(id)) }

func (g *gate) handler(ctx context.Context) error {
	run, _ := executor.RunFrom(ctx)
	g.started <- run.ExecutionID
	select {
	case <-g.ch(run.ExecutionID):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) waitStart(t *testing.T) int64 {
	t.Helper()
	select {
	case id := <-g.started:
		return id
	case <-time.After(wait):
		t.Fatal("no run started")
		return 0
	}
}

func TestRegistersAndHeartbeats(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	peer.HeartbeatMs = 20
	s := startOn(t, peer, t.TempDir(), func(ex *executor.Executor) {
		ex.Handle("report", func(context.Context) error { return nil })
		ex.Handle("http", func(context.Context) error { return nil })
	})
	peer.Wait(t, wait, "three registrations", func() bool { return len(peer.Registrations()) >= 3 })
	for _, reg := range peer.Registrations()[:3] {
		if reg.App != "billing" || reg.Address != s.addr || strings.Join(reg.Handlers, ",") != "http,report" {
			t.Fatalf("registration %+v: want app billing, address %s, handlers http,report", reg, s.addr)
		}
	}
	if !strings.HasPrefix(s.addr, "http://127.0.0.1:") {
		t.Errorf("address %q: want the listener's http://127.0.0.1:port", s.addr)
	}
	if err := peer.Beat(context.Background(), s.addr); err != nil {
		t.Errorf("beat: %v", err)
	}
	if err := s.ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.ex.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	un := peer.Unregistrations()
	if len(un) != 1 || un[0].Address != s.addr || un[0].App != "billing" {
		t.Errorf("unregistrations %+v: want one for %s", un, s.addr)
	}
	n := len(peer.Registrations())
	// After Stop no heartbeat may follow; a beat to the closed endpoint must fail.
	if err := peer.Beat(context.Background(), s.addr); err == nil {
		t.Error("beat after Stop succeeded")
	}
	if m := len(peer.Registrations()); m != n {
		t.Errorf("%d registrations after Stop", m-n)
	}
}

// TestWrongToken: a wrong credential is refused at registration.
func TestWrongToken(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: "wrong", App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := ex.Start(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Start with a wrong token: %v, want a 401 refusal", err)
	}
}

// startReporter starts an executor whose handler "report" records the id of the last run
// it ran, and returns it with that record and its instance id.
func startReporter(t *testing.T) (*setup, *atomic.Int64, string) {
	ran := new(atomic.Int64)
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("report", func(ctx context.Context) error { r, _ := executor.RunFrom(ctx); ran.Store(r.ExecutionID); return nil })
	})
	return s, ran, s.peer.InstanceAt(s.addr)
}

// TestSignedCalls: the executor takes the server's calls only signed by the cluster key its
// server named: a call with the executor's own token and no signature, a call signed by
// another cluster's key, a replayed call, a call whose body or instance was altered, and a run
// or kill signed for no instance are refused with 401, and the run never starts.
func TestSignedCalls(t *testing.T) {
	s, ran, self := startReporter(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	run := func(id int64) wire.RunRequest {
		return wire.RunRequest{ExecutionID: id, JobID: 1, Handler: "report", Concurrency: "allow", Instance: self}
	}
	refused := func(what string, req *http.Request) {
		t.Helper()
		status, body, err := executortest.Send(req)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d (%s), want 401", what, status, body)
		}
	}
	mustReq := func(req *http.Request, err error) *http.Request {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return req
	}

	// The executor's own credential proves nothing: the server never sends it.
	for _, path := range []string{wire.PathRun, wire.PathKill, wire.PathBeat, wire.PathIdleBeat} {
		req := mustReq(s.peer.Request(ctx, s.addr, path, self, run(1)))
		req.Header.Del("Sundial-Signature")
		req.Header.Set("Authorization", "Bearer "+token)
		refused(path+" with the token and no signature", req)
	}
	other := executortest.NewPeer(t, token) // another cluster: its own key
	refused("a run signed by another cluster's key", mustReq(other.RequestFor(ctx, s.addr, wire.PathRun,
		execsign.Target{App: s.peer.Registrations()[0].App, Instance: self, Address: s.addr}, run(2))))

	good := mustReq(s.peer.Request(ctx, s.addr, wire.PathRun, self, run(3)))
	if status, body, err := executortest.Send(good); err != nil || status != http.StatusOK || !strings.Contains(string(body), `"accepted":true`) {
		t.Fatalf("a signed run: %d %s %v", status, body, err)
	}
	s.peer.WaitResult(t, 3, wait)
	refused("the same run replayed", good)

	altered := mustReq(s.peer.Request(ctx, s.addr, wire.PathRun, self, run(4)))
	altered.GetBody = func() (io.ReadCloser, error) {
		b, _ := json.Marshal(run(5))
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	refused("a run whose body was altered", altered)
	moved := mustReq(s.peer.Request(ctx, s.addr, wire.PathRun, self, run(6)))
	moved.Header.Set("Sundial-Signature", strings.Replace(moved.Header.Get("Sundial-Signature"), "instance="+self, "instance=", 1))
	refused("a run whose signed instance was altered", moved)
	anyone := run(7)
	anyone.Instance = ""
	refused("a run signed for no instance", mustReq(s.peer.Request(ctx, s.addr, wire.PathRun, "", anyone)))
	refused("a kill signed for no instance", mustReq(s.peer.Request(ctx, s.addr, wire.PathKill, "", wire.KillRequest{ExecutionID: 3})))
	if id := ran.Load(); id != 3 {
		t.Fatalf("the last run that ran is %d, want only 3 (the one signed run)", id)
	}
	for _, id := range []int64{1, 2, 4, 5, 6, 7} {
		if s.peer.HasResult(id) {
			t.Errorf("refused run %d reported a result", id)
		}
	}

	// A beat is signed for this address (it names no instance), and names this instance.
	status, body, err := s.peer.Call(ctx, s.addr, wire.PathBeat, "", struct{}{})
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), self) {
		t.Fatalf("a beat: %d %s %v; want it to name instance %s", status, body, err, self)
	}
}

// TestMisdirectedCalls: a well-signed call meant for another app, another instance (the
// process that was here before) or, naming no instance, another address is refused with
// StatusMisdirected saying why and who answered, and does nothing: an executor runs only its
// own app's runs whatever address the server was told (issue 20, item 1), and a beat cannot
// be replayed to another executor (item 10).
func TestMisdirectedCalls(t *testing.T) {
	s, ran, self := startReporter(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	app := s.peer.Registrations()[0].App
	run := func(id int64, instance string) wire.RunRequest {
		return wire.RunRequest{ExecutionID: id, JobID: 1, Handler: "report", Concurrency: "allow", Instance: instance}
	}
	misdirected := func(what, path string, to execsign.Target, body any, reason string) {
		t.Helper()
		req, err := s.peer.RequestFor(ctx, s.addr, path, to, body)
		if err != nil {
			t.Fatal(err)
		}
		status, answer, err := executortest.Send(req)
		if err != nil {
			t.Fatal(err)
		}
		var m wire.Misdirected
		if status != wire.StatusMisdirected || json.Unmarshal(answer, &m) != nil || m.Reason != reason || m.App != app || m.Instance != self {
			t.Errorf("%s: %d %s; want %d %s naming app %s, instance %s", what, status, answer, wire.StatusMisdirected, reason, app, self)
		}
	}
	here := strings.TrimRight(s.addr, "/")
	misdirected("another app's run, signed for this instance", wire.PathRun,
		execsign.Target{App: "beta", Instance: self, Address: here}, run(1, self), wire.MisdirectedApp)
	misdirected("another app's kill", wire.PathKill, execsign.Target{App: "beta", Instance: self, Address: here},
		wire.KillRequest{ExecutionID: 1}, wire.MisdirectedApp)
	misdirected("another app's beat", wire.PathBeat, execsign.Target{App: "beta", Address: here}, struct{}{}, wire.MisdirectedApp)
	misdirected("a run for the process before", wire.PathRun,
		execsign.Target{App: app, Instance: "an-earlier-process", Address: here}, run(2, "an-earlier-process"), wire.MisdirectedInstance)
	misdirected("a kill for the process before", wire.PathKill,
		execsign.Target{App: app, Instance: "an-earlier-process", Address: here}, wire.KillRequest{ExecutionID: 2}, wire.MisdirectedInstance)
	misdirected("a beat for another executor's address", wire.PathBeat,
		execsign.Target{App: app, Address: "http://10.9.9.9:9999"}, struct{}{}, wire.MisdirectedAddress)
	misdirected("an idle-beat for another executor's address", wire.PathIdleBeat,
		execsign.Target{App: app, Address: "http://10.9.9.9:9999"}, wire.IdleBeatRequest{JobID: 1}, wire.MisdirectedAddress)
	misdirected("a beat for another instance", wire.PathBeat,
		execsign.Target{App: app, Instance: "an-earlier-process", Address: here}, struct{}{}, wire.MisdirectedInstance)

	// A beat for this instance, at any address the server knows it by, is answered.
	req, err := s.peer.RequestFor(ctx, s.addr, wire.PathBeat, execsign.Target{App: app, Instance: self, Address: "http://lb.example"}, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if status, body, err := executortest.Send(req); err != nil || status != http.StatusOK || !strings.Contains(string(body), self) {
		t.Fatalf("a beat for this instance: %d %s %v", status, body, err)
	}
	if resp, err := s.peer.Run(ctx, s.addr, run(3, self)); err != nil || !resp.Accepted {
		t.Fatalf("this app's run for this instance: %+v, %v", resp, err)
	}
	s.peer.WaitResult(t, 3, wait)
	if id := ran.Load(); id != 3 {
		t.Fatalf("the last run that ran is %d, want only 3: a misdirected run ran", id)
	}
	for _, id := range []int64{1, 2} {
		if s.peer.HasResult(id) {
			t.Errorf("misdirected run %d reported a result", id)
		}
	}
}

func TestRunStreamsLogsAndReportsResult(t *testing.T) {
	const lines = 250 // more than one batch
	var got executor.Run
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("report", func(ctx context.Context) error {
			got, _ = executor.RunFrom(ctx)
			log := executor.Logger(ctx).With("shard", got.ShardIndex)
			for i := 1; i <= lines; i++ {
				log.Info("line", "n", i)
			}
			log.Warn("almost done", "note", "two words")
			return nil
		})
	})
	sched, fired := time.UnixMilli(1732230000000), time.UnixMilli(1732230000250)
	// No idempotency key, as from a server older than the field: the executor makes the same one.
	s.mustRun(t, wire.RunRequest{ExecutionID: 42, JobID: 7, Handler: "report", Params: "p=1",
		Concurrency: "allow", ShardIndex: 1, ShardTotal: 3, ScheduledAt: sched.UnixMilli(), Attempt: 2,
		TriggerID: 9, FiredAt: fired.UnixMilli()})
	res := s.peer.WaitResult(t, 42, wait)
	if res.State != wire.StateSucceeded || res.Code != 200 || res.StartedAt == 0 || res.FinishedAt < res.StartedAt {
		t.Errorf("result %+v: want succeeded, 200, started <= finished", res)
	}
	want := executor.Run{ExecutionID: 42, JobID: 7, TriggerID: 9, Handler: "report", Params: "p=1", ShardIndex: 1,
		ShardTotal: 3, Attempt: 2, ScheduledAt: sched, FiredAt: fired, IdempotencyKey: "j7-t9-1732230000000-s1"}
	if !got.ScheduledAt.Equal(want.ScheduledAt) || !got.FiredAt.Equal(want.FiredAt) {
		t.Errorf("scheduled %v fired %v, want %v and %v", got.ScheduledAt, got.FiredAt, sched, fired)
	}
	// Equal above; == would compare the location pointer too.
	got.ScheduledAt, got.FiredAt = want.ScheduledAt, want.FiredAt
	if got != want {
		t.Errorf("RunFrom = %+v, want %+v", got, want)
	}
	// The lines were sent before the result.
	ls := s.peer.Lines(42)
	if len(ls) != lines+1 {
		t.Fatalf("%d lines, want %d", len(ls), lines+1)
	}
	for i, l := range ls {
		if l.Line != int64(i+1) || l.At == 0 {
			t.Fatalf("line %d: %+v, want number %d and a time", i, l, i+1)
		}
	}
	if ls[0].Message != "line shard=1 n=1" || ls[lines].Message != `WARN almost done shard=1 note="two words"` {
		t.Errorf("lines %q … %q", ls[0].Message, ls[lines].Message)
	}
}

func TestLogsStreamWhileRunning(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("slow", func(ctx context.Context) error {
			executor.Logger(ctx).Info("working")
			return g.handler(ctx)
		})
	})
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "slow"})
	g.waitStart(t)
	// The flusher sends within ~200 ms; the run is still blocked here.
	s.peer.WaitOutput(t, 1, "working", wait)
	if _, done := s.peer.Result(1); done {
		t.Fatal("result before the run ended")
	}
	g.open(1)
	if res := s.peer.WaitResult(t, 1, wait); res.State != wire.StateSucceeded {
		t.Errorf("result %+v", res)
	}
}

// TestRefusedOutputGoesWithTheResult: output the server did not take while the run lasted
// travels with the result (the server stores it before the result), and what does not fit
// there is counted in the result, so the run shows its output was cut instead of looking
// complete.
func TestRefusedOutputGoesWithTheResult(t *testing.T) {
	big := strings.Repeat("x", 60000) // five of these are more than a result carries
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("chatty", func(ctx context.Context) error {
			for i := range 3 {
				executor.Logger(ctx).Info("line", "n", i)
			}
			return nil
		})
		ex.Handle("verbose", func(ctx context.Context) error {
			for i := range 5 {
				executor.Logger(ctx).Info(big, "n", i)
			}
			return nil
		})
	})
	s.peer.FailLogs(http.StatusServiceUnavailable)
	s.mustRun(t, wire.RunRequest{ExecutionID: 5, JobID: 1, Handler: "chatty"})
	res := s.peer.WaitResult(t, 5, wait)
	if res.State != wire.StateSucceeded || res.LinesLost != 0 || len(res.Lines) != 3 {
		t.Errorf("result %+v: want succeeded carrying 3 lines, none lost", res)
	}
	ls := s.peer.Lines(5)
	if len(ls) != 3 {
		t.Fatalf("the peer holds %d lines of the run, want 3", len(ls))
	}
	for i, l := range ls {
		if l.Line != int64(i+1) || !strings.Contains(l.Message, fmt.Sprintf("n=%d", i)) {
			t.Errorf("line %d: %+v", i, l)
		}
	}

	s.mustRun(t, wire.RunRequest{ExecutionID: 6, JobID: 2, Handler: "verbose"})
	res = s.peer.WaitResult(t, 6, wait)
	if res.LinesLost != 1 || len(res.Lines) != 4 || res.Lines[0].Line != 2 {
		t.Errorf("result with %d lines from line %d, %d lost: want the newest 4 carried (from line 2), 1 lost",
			len(res.Lines), res.Lines[0].Line, res.LinesLost)
	}
	if n := len(s.peer.Lines(6)); n != 4 {
		t.Errorf("the peer holds %d lines of the verbose run, want 4", n)
	}
}

// TestResultRefusedWithLinesGoesWithout: a server that refuses a result because of the
// lines it carries (one from before results carried them) still gets the result, without
// them, counted lost: the result matters more than its output.
func TestResultRefusedWithLinesGoesWithout(t *testing.T) {
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("chatty", func(ctx context.Context) error {
			for i := range 3 {
				executor.Logger(ctx).Info("line", "n", i)
			}
			return nil
		})
	})
	s.peer.FailLogs(http.StatusServiceUnavailable)
	s.peer.RefuseResultLines(true)
	s.mustRun(t, wire.RunRequest{ExecutionID: 8, JobID: 1, Handler: "chatty"})
	res := s.peer.WaitResult(t, 8, wait)
	if res.State != wire.StateSucceeded || res.LinesLost != 3 || len(res.Lines) != 0 {
		t.Errorf("result %+v: want succeeded without lines, 3 lost", res)
	}
	if n := s.peer.RefusedResultCalls(); n != 1 {
		t.Errorf("%d results calls refused, want the one with lines", n)
	}
}

func TestFailuresAndRefusals(t *testing.T) {
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("fail", func(context.Context) error { return errors.New("disk full") })
		ex.Handle("panic", func(context.Context) error { panic("boom") })
	})
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "fail"})
	s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 2, Handler: "panic"})
	if res := s.peer.WaitResult(t, 1, wait); res.State != wire.StateFailed || res.Code != 500 || res.Message != "disk full" {
		t.Errorf("failing handler: %+v", res)
	}
	if res := s.peer.WaitResult(t, 2, wait); res.State != wire.StateFailed || !strings.Contains(res.Message, "boom") {
		t.Errorf("panicking handler: %+v", res)
	}
	if !strings.Contains(s.peer.Output(1), "ERROR disk full") {
		t.Errorf("output %q: want the error as the last line", s.peer.Output(1))
	}
	if resp := s.run(t, wire.RunRequest{ExecutionID: 3, JobID: 3, Handler: "nope"}); resp.Accepted || !strings.Contains(resp.Message, `unknown handler "nope"`) {
		t.Errorf("unknown handler: %+v", resp)
	}
	if resp := s.run(t, wire.RunRequest{ExecutionID: 4, JobID: 3, Handler: "fail", Concurrency: "sometimes"}); resp.Accepted {
		t.Errorf("unknown policy accepted: %+v", resp)
	}
}

func TestSerialRunsOneAtATimeInOrder(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	if !s.idle(t, 5) {
		t.Fatal("job 5 not idle before any run")
	}
	for id := int64(1); id <= 3; id++ {
		s.mustRun(t, wire.RunRequest{ExecutionID: id, JobID: 5, Handler: "g", Concurrency: "serial"})
	}
	// A run of another job is not held up by job 5.
	s.mustRun(t, wire.RunRequest{ExecutionID: 10, JobID: 6, Handler: "g", Concurrency: "serial"})
	first, other := g.waitStart(t), g.waitStart(t)
	if first == 10 {
		first, other = other, first
	}
	if first != 1 || other != 10 {
		t.Fatalf("started %d and %d, want 1 and 10", first, other)
	}
	if s.idle(t, 5) {
		t.Error("job 5 idle while it runs")
	}
	for id := int64(1); id <= 3; id++ {
		select {
		case extra := <-g.started:
			t.Fatalf("execution %d started while %d runs", extra, id)
		default:
		}
		g.open(id)
		s.peer.WaitResult(t, id, wait)
		if id < 3 {
			if next := g.waitStart(t); next != id+1 {
				t.Fatalf("after %d started %d, want %d", id, next, id+1)
			}
		}
	}
	g.open(10)
	s.peer.WaitResult(t, 10, wait)
	if !s.idle(t, 5) {
		t.Error("job 5 not idle after its runs")
	}
	if r1, _ := s.peer.Result(1); r1.FinishedAt > mustResult(t, s.peer, 2).StartedAt {
		t.Error("execution 2 started before 1 finished")
	}
}

func mustResult(t *testing.T, p *executortest.Peer, id int64) wire.Result {
	t.Helper()
	r, ok := p.Result(id)
	if !ok {
		t.Fatalf("no result for %d", id)
	}
	return r
}

func TestDiscardRefusesWhileOneRuns(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", Concurrency: "discard"})
	g.waitStart(t)
	resp := s.run(t, wire.RunRequest{ExecutionID: 2, JobID: 5, Handler: "g", Concurrency: "discard"})
	if resp.Accepted || !strings.Contains(resp.Message, "discard") {
		t.Errorf("second run while one runs: %+v, want refused", resp)
	}
	g.open(1)
	s.peer.WaitResult(t, 1, wait)
	s.mustRun(t, wire.RunRequest{ExecutionID: 3, JobID: 5, Handler: "g", Concurrency: "discard"})
	if id := g.waitStart(t); id != 3 {
		t.Errorf("started %d, want 3", id)
	}
	g.open(3)
	s.peer.WaitResult(t, 3, wait)
	if _, ok := s.peer.Result(2); ok {
		t.Error("the discarded run reported a result")
	}
}

func TestReplaceCancelsTheRunningOne(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", Concurrency: "replace"})
	g.waitStart(t)
	s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 5, Handler: "g", Concurrency: "replace"})
	res := s.peer.WaitResult(t, 1, wait)
	if res.State != wire.StateCanceled || !strings.Contains(res.Message, "replaced by execution 2") {
		t.Errorf("replaced run: %+v, want canceled by 2", res)
	}
	if id := g.waitStart(t); id != 2 {
		t.Fatalf("started %d, want 2", id)
	}
	g.open(2)
	if res := s.peer.WaitResult(t, 2, wait); res.State != wire.StateSucceeded {
		t.Errorf("replacing run: %+v", res)
	}
}

func TestTimeout(t *testing.T) {
	g := newGate()
	var deadline time.Time
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("g", func(ctx context.Context) error {
			deadline, _ = ctx.Deadline()
			return g.handler(ctx)
		})
	})
	before := time.Now()
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", TimeoutMs: 50})
	res := s.peer.WaitResult(t, 1, wait)
	if res.State != wire.StateTimedOut || res.Code != 502 {
		t.Errorf("result %+v, want timed_out 502", res)
	}
	if d := deadline.Sub(before); d <= 0 || d > time.Second {
		t.Errorf("handler deadline %v after the run, want about 50ms", d)
	}
}

func TestKill(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	ctx := context.Background()
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", Concurrency: "serial"})
	s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 5, Handler: "g", Concurrency: "serial"})
	g.waitStart(t)
	if killed, err := s.peer.Kill(ctx, s.addr, 2); err != nil || !killed {
		t.Fatalf("kill queued: %v %v", killed, err)
	}
	if res := s.peer.WaitResult(t, 2, wait); res.State != wire.StateCanceled || res.StartedAt != 0 {
		t.Errorf("killed queued run: %+v, want canceled, never started", res)
	}
	if killed, err := s.peer.Kill(ctx, s.addr, 1); err != nil || !killed {
		t.Fatalf("kill running: %v %v", killed, err)
	}
	if res := s.peer.WaitResult(t, 1, wait); res.State != wire.StateCanceled || res.Message != "killed" {
		t.Errorf("killed run: %+v, want canceled killed", res)
	}
	if killed, err := s.peer.Kill(ctx, s.addr, 99); err != nil || killed {
		t.Errorf("kill of an unknown execution: %v %v, want false", killed, err)
	}
	if !s.idle(t, 5) {
		t.Error("job not idle after the kills")
	}
}

func TestStopWaitsForRunningHandlers(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g", Concurrency: "serial"})
	s.mustRun(t, wire.RunRequest{ExecutionID: 2, JobID: 5, Handler: "g", Concurrency: "serial"})
	g.waitStart(t)
	stopped := make(chan error)
	go func() { stopped <- s.ex.Stop(context.Background()) }()
	s.peer.Wait(t, wait, "the queued run canceled", func() bool { return s.peer.HasResult(2) })
	if r := mustResult(t, s.peer, 2); r.State != wire.StateCanceled {
		t.Errorf("queued run at stop: %+v", r)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a handler runs", err)
	default:
	}
	g.open(1)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if r := mustResult(t, s.peer, 1); r.State != wire.StateSucceeded {
		t.Errorf("run finished during stop: %+v", r)
	}
}

func TestStopCancelsHandlersWhenItsContextEnds(t *testing.T) {
	g := newGate()
	s := start(t, func(ex *executor.Executor) { ex.Handle("g", g.handler) })
	s.mustRun(t, wire.RunRequest{ExecutionID: 1, JobID: 5, Handler: "g"})
	g.waitStart(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.ex.Stop(ctx)
	// The result could not be sent within the expired context: it is spooled, or it was sent.
	if r, ok := s.peer.Result(1); ok && r.State != wire.StateCanceled {
		t.Errorf("result %+v, want canceled", r)
	}
	if _, ok := s.peer.Result(1); !ok && len(spooled(t, s.dir)) != 1 {
		t.Error("result neither delivered nor spooled")
	}
}

// spooled reads the results in the spool directory dir, in its files of either version.
func spooled(t *testing.T, dir string) []wire.Result {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "result*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []wire.Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // delivered meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		var rs []wire.Result
		if strings.HasPrefix(filepath.Base(f), "results-") {
			err = json.Unmarshal(b, &rs)
		} else {
			rs = make([]wire.Result, 1)
			err = json.Unmarshal(b, &rs[0])
		}
		if err != nil {
			t.Fatalf("spool file %s: %v", f, err)
		}
		out = append(out, rs...)
	}
	return out
}

// spoolFiles counts the files in the spool directory dir.
func spoolFiles(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "result*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// eventually polls cond for a bounded time: for state on disk, which no peer signal covers.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestResultsSpooledWhileServerFailsThenDelivered(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	dir := t.TempDir()
	s := startOn(t, peer, dir, func(ex *executor.Executor) {
		ex.Handle("ok", func(context.Context) error { return nil })
	})
	peer.FailResults(http.StatusServiceUnavailable)
	s.mustRun(t, wire.RunRequest{ExecutionID: 7, JobID: 1, Handler: "ok"})
	peer.Wait(t, wait, "a refused results call", func() bool { return peer.RefusedResultCalls() >= 1 })
	eventually(t, "the result in the spool", func() bool { return len(spooled(t, dir)) == 1 })
	if got := spooled(t, dir)[0]; got.ExecutionID != 7 || got.State != wire.StateSucceeded {
		t.Fatalf("spooled %+v, want execution 7 succeeded", got)
	}
	peer.FailResults(0)
	if res := peer.WaitResult(t, 7, wait); res.State != wire.StateSucceeded {
		t.Errorf("delivered %+v", res)
	}
	eventually(t, "an empty spool", func() bool { return spoolFiles(t, dir) == 0 })
}

func TestSpooledResultsSurviveARestart(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	dir := t.TempDir()
	peer.FailResults(http.StatusServiceUnavailable)
	peer.FailLogs(http.StatusServiceUnavailable) // the server is away: output goes with the results
	first := startOn(t, peer, dir, func(ex *executor.Executor) {
		ex.Handle("ok", func(ctx context.Context) error {
			executor.Logger(ctx).Info("said before the outage ended")
			return nil
		})
	})
	for id := int64(1); id <= 3; id++ {
		first.mustRun(t, wire.RunRequest{ExecutionID: id, JobID: id, Handler: "ok"})
	}
	eventually(t, "three spooled results", func() bool { return len(spooled(t, dir)) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := first.ex.Stop(ctx); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Stop with undelivered results: %v, want an error naming %s", err, dir)
	}
	if n := peer.ResultCalls(); n != 0 {
		t.Fatalf("%d results calls taken while failing", n)
	}

	peer.FailResults(0)
	startOn(t, peer, dir, nil) // a new process on the same spool
	for id := int64(1); id <= 3; id++ {
		if res := peer.WaitResult(t, id, wait); res.State != wire.StateSucceeded {
			t.Errorf("result %d after restart: %+v", id, res)
		}
		if out := peer.Output(id); !strings.Contains(out, "said before the outage ended") {
			t.Errorf("output of %d after restart: %q, want the line spooled with its result", id, out)
		}
	}
	eventually(t, "an empty spool", func() bool { return spoolFiles(t, dir) == 0 })
}

// TestSpoolOfAnEarlierVersion: an executor started on a spool an earlier version wrote (one
// file per result) delivers those results, keeps the newest of a result spooled twice, and
// empties the spool; an unreadable file is moved aside, not deleted.
func TestSpoolOfAnEarlierVersion(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	dir := t.TempDir()
	write := func(name string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("result-11.json", wire.Result{ExecutionID: 11, State: wire.StateSucceeded, Message: "from the old version", FinishedAt: 1})
	write("result-12.json", wire.Result{ExecutionID: 12, State: wire.StateFailed, Message: "reported first", FinishedAt: 1})
	write("results-00000000000000000001-00000001.json", []wire.Result{{ExecutionID: 12, State: wire.StateSucceeded, Message: "reported again", FinishedAt: 2}})
	if err := os.WriteFile(filepath.Join(dir, "result-13.json"), []byte("{cut"), 0o600); err != nil {
		t.Fatal(err)
	}
	startOn(t, peer, dir, nil)
	if res := peer.WaitResult(t, 11, wait); res.Message != "from the old version" {
		t.Errorf("result 11: %+v", res)
	}
	if res := peer.WaitResult(t, 12, wait); res.Message != "reported again" {
		t.Errorf("result 12: %+v, want the one spooled later", res)
	}
	eventually(t, "an empty spool", func() bool { return spoolFiles(t, dir) == 0 })
	if _, err := os.Stat(filepath.Join(dir, "result-13.json.bad")); err != nil {
		t.Errorf("the unreadable file was not moved aside: %v", err)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, cfg := range []executor.Config{
		{Token: "t", App: "a"},
		{Server: "http://x", App: "a"},
		{Server: "http://x", Token: "t"},
		{Server: "x:8080", Token: "t", App: "a"},
		{Server: "http://x", Token: "t", App: "a", Advertise: "10.0.0.1:9999"},
	} {
		if _, err := executor.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if l := executor.Logger(context.Background()); l == nil {
		t.Error("Logger outside a run is nil")
	}
	if _, ok := executor.RunFrom(context.Background()); ok {
		t.Error("RunFrom outside a run found one")
	}
}

// TestRepeatedRunRunsOnce checks the executor's side of a /run whose answer the server lost:
// the server sends it again with the same execution id, while the run goes on and after it
// has finished, and the handler runs once.
func TestRepeatedRunRunsOnce(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	s := start(t, func(ex *executor.Executor) {
		ex.Handle("once", func(ctx context.Context) error {
			runs.Add(1)
			<-release
			return nil
		})
	})
	req := wire.RunRequest{ExecutionID: 77, JobID: 7, Handler: "once", Concurrency: "serial"}
	s.mustRun(t, req)
	if resp := s.run(t, req); !resp.Accepted {
		t.Fatalf("a repeat while the run goes on was refused: %s", resp.Message)
	}
	close(release)
	s.peer.WaitResult(t, 77, wait)
	if resp := s.run(t, req); !resp.Accepted || resp.Message != "already ran" {
		t.Fatalf("a repeat after the run ended: %+v, want accepted as already ran", resp)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// TestClockDrivesTheExecutor runs an executor on a fake clock: the heartbeat waits for the
// clock, a handler that ignores its cancellation is given up on after the grace measured on
// the clock, and the result carries the clock's time.
func TestClockDrivesTheExecutor(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	peer.HeartbeatMs = 1000
	fake := clock.NewFake(time.UnixMilli(1732230000000))
	peer.Now = fake.Now
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir(), Logger: testLogger(t), Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	ex.Handle("stuck", func(context.Context) error { close(started); <-stuck; return nil })
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = ex.Stop(ctx)
	})
	done := make(chan struct{})
	defer close(done)
	fake.WaitForTimers(1, done) // the heartbeat sleeps on the clock
	if n := len(peer.Registrations()); n != 1 {
		t.Fatalf("%d registrations before the clock moved, want 1", n)
	}
	fake.Advance(time.Second)
	peer.Wait(t, wait, "the heartbeat after one interval", func() bool { return len(peer.Registrations()) == 2 })

	resp, err := peer.Run(context.Background(), ex.Address(), wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "stuck"})
	if err != nil || !resp.Accepted {
		t.Fatal(resp, err)
	}
	<-started
	if killed, err := peer.Kill(context.Background(), ex.Address(), 1); !killed || err != nil {
		t.Fatalf("kill: %v %v", killed, err)
	}
	fake.WaitForTimers(2, done) // heartbeat and the grace of the killed handler (it printed nothing: no output timer)
	if peer.HasResult(1) {
		t.Fatal("reported before the grace passed on the clock")
	}
	fake.Advance(5 * time.Second)
	res := peer.WaitResult(t, 1, wait)
	if res.State != wire.StateCanceled || res.FinishedAt != fake.Now().UnixMilli() {
		t.Errorf("result %+v: want canceled, finished at the clock's %d", res, fake.Now().UnixMilli())
	}
}

// records is a slog.Handler that hands each record to a channel.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	r <- rec
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// TestStopSaysWhatItWaitsFor: stopping with a run in progress logs which runs it waits for
// and how long, instead of draining silently.
func TestStopSaysWhatItWaitsFor(t *testing.T) {
	g := newGate()
	peer := executortest.NewPeer(t, token)
	logs := make(records, 100)
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir(), Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("g", g.handler)
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := &setup{peer: peer, ex: ex, addr: ex.Address()}
	s.mustRun(t, wire.RunRequest{ExecutionID: 7, JobID: 5, Handler: "g"})
	g.waitStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- ex.Stop(ctx) }()
	for {
		select {
		case rec := <-logs:
			if !strings.HasPrefix(rec.Message, "stopping: waiting for running jobs") {
				continue
			}
			got := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { got[a.Key] = a.Value.String(); return true })
			if d, err := time.ParseDuration(got["wait"]); got["execution_ids"] != "[7]" || err != nil || d <= 0 || d > time.Minute {
				t.Errorf("drain log %q %v: want execution_ids [7] and a wait of at most 1m0s", rec.Message, got)
			}
			g.open(7)
			if err := <-stopped; err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(wait):
			t.Fatal("Stop logged nothing about the run it waits for")
		}
	}
}
