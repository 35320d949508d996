package dispatch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestRunAnswerLost puts a real executor behind a proxy that delivers the first /run and
// then drops the connection without its answer. The dispatcher sends the run again; the
// executor answers that it has it; the handler runs once and the fire is handed over, where
// failing it would have had the job's retry run it a second time.
func TestRunAnswerLost(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	st, job, exe, peer, runs, got := fx.st, fx.job, fx.exe, fx.peer, &fx.runs, fx.got
	ex := fx.running(t, store.Owner{Node: "n"})

	target, err := url.Parse(exe.Address())
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	var dropped atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathRun && dropped.CompareAndSwap(false, true) {
			body, _ := io.ReadAll(r.Body)
			req, _ := http.NewRequest(http.MethodPost, exe.Address()+wire.PathRun, bytes.NewReader(body))
			req.Header = r.Header.Clone()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the run reached the executor; its answer never comes back
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	r := NewRemote(Config{Store: st})
	res := r.send(ctx, ex, job, proxy.URL, 0, 1, nil, "")
	if !dropped.Load() {
		t.Fatal("the proxy never dropped an answer; the test proves nothing")
	}
	if !res.Async || res.Err != nil {
		t.Fatalf("dispatch after a lost answer: %+v, want the run handed over", res)
	}
	if got := peer.WaitResult(t, ex.ID, 10*time.Second); got.State != wire.StateSucceeded {
		t.Fatalf("result %+v, want succeeded", got)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	// The run carries its fire's identity: fired time and idempotency key.
	run := <-got
	if run.FiredAt.UnixMilli() != ex.FiredAt || run.IdempotencyKey != jobrun.IdempotencyKey(job.ID, 0, ex.ScheduledAt, 0) {
		t.Errorf("run fired at %v with key %q, want %d and the fire's key", run.FiredAt, run.IdempotencyKey, ex.FiredAt)
	}
}

// TestRunRepeatsOnTheClock drops the first two /run calls without an answer: the dispatcher
// sends the run again after the pauses of runRepeats, measured on its clock, not before.
func TestRunRepeatsOnTheClock(t *testing.T) {
	var calls atomic.Int32
	exe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		io.WriteString(w, `{"accepted":true}`)
	}))
	t.Cleanup(exe.Close)
	fake := clock.NewFake(time.Unix(1732230000, 0))
	r := NewRemote(Config{Store: newTestStore(t), Clock: fake,
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})

	done := make(chan struct{})
	var resp wire.RunResponse
	var err error
	go func() {
		defer close(done)
		err = r.callRepeating(context.Background(), "billing", exe.URL, wire.PathRun, "i1", wire.RunRequest{ExecutionID: 1, Instance: "i1"}, &resp)
	}()
	for i := range runAttempts - 1 {
		pause := runRepeats.Delay(i)
		if !fake.WaitForTimers(1, done) {
			t.Fatalf("pause %d: the call returned instead of waiting: %v", i, err)
		}
		if n := calls.Load(); n != int32(i+1) {
			t.Fatalf("pause %d: %d calls before the clock moved, want %d", i, n, i+1)
		}
		fake.Advance(pause)
	}
	<-done
	if err != nil || !resp.Accepted || calls.Load() != 3 {
		t.Fatalf("after the repeats: %v %+v, %d calls; want accepted on the third", err, resp, calls.Load())
	}
}

// TestSendFencedOnOwner dispatches a fire whose node's life was declared dead meanwhile (the
// leader declared the run lost): the dispatcher must not send it, where the executor would
// run a fire that the cluster may have fired again. A fire still the life's is sent, and the
// executor's acceptance recorded: from then on the run is the executor's, not lost with the
// node.
func TestSendFencedOnOwner(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	frozen := store.Owner{Node: "n", Incarnation: "frozen"}
	lost := fx.running(t, frozen)
	if got, err := fx.st.ExecutionsLoseRunning(ctx, frozen); err != nil || len(got) != 1 {
		t.Fatalf("declare the run lost: %v, %v", got, err)
	}
	r := NewRemote(Config{Store: fx.st})
	if res := r.send(ctx, lost, fx.job, fx.exe.Address(), 0, 1, nil, ""); res.Err == nil || res.Async {
		t.Fatalf("dispatch of a run declared lost: %+v, want a refusal", res)
	}
	if n := r.Stats().NotOwned.Load(); n != 1 {
		t.Errorf("NotOwned = %d, want 1", n)
	}

	alive := store.Owner{Node: "n", Incarnation: "alive"}
	ex := fx.running(t, alive)
	if res := r.send(ctx, ex, fx.job, fx.exe.Address(), 0, 1, nil, ""); !res.Async || res.Err != nil {
		t.Fatalf("dispatch: %+v, want the run handed over", res)
	}
	got, err := fx.st.ExecutionGet(ctx, ex.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.TriggerCode != store.DispatchAccepted {
		t.Errorf("trigger code %d after the executor accepted, want %d", got.TriggerCode, store.DispatchAccepted)
	}
	if res := fx.peer.WaitResult(t, ex.ID, 10*time.Second); res.State != wire.StateSucceeded {
		t.Fatalf("result %+v, want succeeded", res)
	}
	if n := fx.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once (the lost run never reaches the executor)", n)
	}
}

// recordFailsStore is the real store, except that its first writes of a dispatch record
// (of an acceptance when acceptances is set, of a send otherwise) fail (fails of them), as
// while the database is away.
type recordFailsStore struct {
	store.Store
	acceptances bool
	fails       atomic.Int32
}

func (s *recordFailsStore) ExecutionsRecordDispatches(ctx context.Context, recs []store.DispatchRecord) ([]bool, error) {
	if slices.ContainsFunc(recs, func(r store.DispatchRecord) bool { return r.Accepted == s.acceptances }) && s.fails.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return s.Store.ExecutionsRecordDispatches(ctx, recs)
}

// TestDispatchRecordedAfterOutage: a dispatch record whose write fails is written again, on
// the clock's pauses, until it is recorded. A send record left unwritten would fail a run
// that nothing was sent for; an acceptance left unwritten would leave the run the node's, to
// be run again by a recovery while the executor runs it.
func TestDispatchRecordedAfterOutage(t *testing.T) {
	for _, acceptances := range []bool{false, true} {
		name := map[bool]string{false: "send", true: "acceptance"}[acceptances]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := &recordFailsStore{Store: newTestStore(t), acceptances: acceptances}
			const fails = 3
			st.fails.Store(fails)
			fx := newRemoteFixtureOn(t, st)
			fake := clock.NewFake(time.Now()) // near the real time: the executor checks the calls' signed times
			r := NewRemote(Config{Store: st, Clock: fake})
			ex := fx.running(t, store.Owner{Node: "n", Incarnation: "i"})

			done, finished := fx.sendAsync(r, ex)
			for i := range fails {
				if !fake.WaitForTimers(1, finished) {
					t.Fatalf("pause %d: the dispatch returned %+v instead of writing its %s record again", i, <-done, name)
				}
				fake.Advance(writeRepeats.Delay(i))
			}
			if res := <-done; !res.Async || res.Err != nil {
				t.Fatalf("dispatch: %+v, want the run handed over", res)
			}
			if n := fx.runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want once", n)
			}
			got, err := st.ExecutionGet(ctx, ex.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.TriggerCode != store.DispatchAccepted || got.ExecutorAddress != fx.exe.Address() {
				t.Errorf("after the outage: trigger code %d, address %q; want %d (accepted), %q", got.TriggerCode, got.ExecutorAddress,
					store.DispatchAccepted, fx.exe.Address())
			}
		})
	}
}

// TestDispatchRecordGivesUp: a send record that cannot be written for the job's dispatch
// timeout fails the run, saying why, and the run never reaches the executor.
func TestDispatchRecordGivesUp(t *testing.T) {
	st := &recordFailsStore{Store: newTestStore(t)}
	st.fails.Store(1 << 30)
	fx := newRemoteFixtureOn(t, st)
	fx.job.DispatchTimeoutMs = 1000
	fake := clock.NewFake(time.Now())
	r := NewRemote(Config{Store: st, Clock: fake})
	ex := fx.running(t, store.Owner{Node: "n", Incarnation: "i"})

	done, finished := fx.sendAsync(r, ex)
	waited := time.Duration(0)
	for i := 0; fake.WaitForTimers(1, finished); i++ {
		if waited > time.Minute {
			t.Fatalf("still writing the record after %v, with a dispatch timeout of 1 s", waited)
		}
		fake.Advance(writeRepeats.Delay(i))
		waited += writeRepeats.Delay(i)
	}
	res := <-done
	if res.Err == nil || res.Async || !strings.Contains(res.Err.Error(), "connection refused") {
		t.Fatalf("dispatch: %+v, want a failure naming the database's error", res)
	}
	if waited < time.Second {
		t.Errorf("gave up after %v, before the job's dispatch timeout of 1 s", waited)
	}
	if n := fx.runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times, want never (nothing was recorded as sent)", n)
	}
}

const fixtureToken = "exec-token"

// remoteFixture is a store with a remote job, and a real executor of its app whose handler
// counts its runs and hands them to got, reporting to a stand-in server.
type remoteFixture struct {
	st   store.Store
	job  *store.Job
	exe  *executor.Executor
	peer *executortest.Peer
	runs atomic.Int32
	got  chan executor.Run
}

// newTestStore opens a migrated SQLite store of the test's own.
func newTestStore(t *testing.T) store.Store {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// clusterSigner is the store's cluster key (made on first use, as a node does), for a
// stand-in server to give executors: then they take the calls a Remote on st signs.
func clusterSigner(t *testing.T, st store.Store) *execsign.Signer {
	t.Helper()
	k := &keyring{st: st, clk: clock.Real{}, interval: time.Second}
	s, err := k.signer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newRemoteFixture(t *testing.T) *remoteFixture { return newRemoteFixtureOn(t, newTestStore(t)) }

func newRemoteFixtureOn(t *testing.T, st store.Store) *remoteFixture {
	ctx := context.Background()
	var err error
	fx := &remoteFixture{st: st, got: make(chan executor.Run, 16)}
	fx.job = &store.Job{Group: "g", Name: "remote", TargetKind: store.TargetRemote, App: "billing", Handler: "once",
		Concurrency: store.ConcurrencyAllow}
	if err := st.JobInsert(ctx, fx.job); err != nil {
		t.Fatal(err)
	}
	fx.peer = executortest.NewPeer(t, fixtureToken)
	fx.peer.Signer = clusterSigner(t, st)
	fx.exe, err = executor.New(executor.Config{Servers: []string{fx.peer.URL}, Token: fixtureToken, App: "billing", Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fx.exe.Handle("once", func(ctx context.Context) error {
		fx.runs.Add(1)
		run, _ := executor.RunFrom(ctx)
		fx.got <- run
		return nil
	})
	if err := fx.exe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.exe.Stop(context.Background()) })
	return fx
}

// sendAsync sends ex to the fixture's executor through r in the background: its result
// arrives on done, and finished is closed once it has.
func (fx *remoteFixture) sendAsync(r *Remote, ex *store.Execution) (done <-chan engine.Result, finished <-chan struct{}) {
	res, over := make(chan engine.Result, 1), make(chan struct{})
	go func() {
		res <- r.send(context.Background(), ex, fx.job, fx.exe.Address(), 0, 1, nil, "")
		close(over)
	}()
	return res, over
}

// running inserts a running execution of the job, owned by o, fired 3 ms after its time.
func (fx *remoteFixture) running(t *testing.T, o store.Owner) *store.Execution {
	now := time.Now().UnixMilli()
	ex := &store.Execution{JobID: fx.job.ID, ScheduledAt: now, FiredAt: now + 3, Cause: store.CauseManual, Node: o.Node,
		Incarnation: o.Incarnation, State: store.ExecRunning}
	if _, err := fx.st.ExecutionsInsert(context.Background(), []*store.Execution{ex}); err != nil {
		t.Fatal(err)
	}
	return ex
}
