package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// ledger is a dispatcher that records every run the engine hands it, outside the database.
type ledger chan *store.Execution

func (l ledger) Dispatch(_ context.Context, f *engine.Fire) engine.Result {
	l <- f.Execution
	return engine.Result{Message: "ran"}
}

// TestExecutorSweepAfterDatabaseCut: the database is cut for longer than an executor may stay
// silent, so every registry row is stale when it heals. Executor back beats again only after
// the leader has seen the database for three executor heartbeats (a node busy catching up
// writes its beats late); executor dead never does. Each holds a running run of a job with a
// retry left. The sweep must not declare back gone for a silence the outage caused, which
// would retry its run while it still runs (a double): at the moment the leader may first
// judge, it takes nobody. The grace is bounded: once it has passed, dead is swept, its run
// lost and retried, and the ledger of runs the engine handed out shows that retry and
// nothing of back's.
func TestExecutorSweepAfterDatabaseCut(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, proxy := teststore.OpenProxied(t, dialect)
			ran := make(ledger, 16)
			// The grace after the outage is 6 node heartbeats: 3 s, time enough to sweep at
			// its start.
			e := startedEngine(t, st, ran, 500*time.Millisecond, 2*time.Second)

			const heartbeat = time.Second // executors': silent for 3 s, one is gone
			const back, dead = "http://10.0.0.1:9999", "http://10.0.0.2:9999"
			runs := map[string]*store.Execution{}
			for _, addr := range []string{back, dead} {
				if err := st.RegistryBeat(ctx, "billing", addr, addr, "1", []string{"h"}); err != nil {
					t.Fatal(err)
				}
				// A job each, to tell their retries apart.
				runs[addr] = runningOn(t, st, "remote "+addr, addr, 1)
			}
			sweep := ExecutorSweep(e, st, heartbeat, func(string) bool { return false }, nil, nil, testLogger(t))
			state := func(addr string) store.ExecutionState {
				t.Helper()
				x, err := st.ExecutionGet(ctx, runs[addr].ID)
				if err != nil {
					t.Fatal(err)
				}
				return x.State
			}

			if err := proxy.Cut(); err != nil {
				t.Fatal(err)
			}
			// The outage outlasts an executor's three heartbeats: it is the fault's length,
			// nothing to wait for.
			time.Sleep(3*heartbeat + 500*time.Millisecond)
			if err := proxy.Heal(); err != nil {
				t.Fatal(err)
			}

			waitUntil(t, "the leader to judge silences again", func() bool { _, ok := e.JudgeSilence(3*heartbeat, heartbeat); return ok })
			if j, _ := e.JudgeSilence(3*heartbeat, heartbeat); j.From == 0 {
				t.Fatal("the grace had passed before the first sweep: the test cannot tell")
			}
			if err := sweep.run(ctx); err != nil {
				t.Fatal(err)
			}
			for _, addr := range []string{back, dead} {
				if got := state(addr); got != store.ExecRunning {
					t.Fatalf("run on %s right after the outage: %s, want running (its executor is silent since the outage)", addr, got)
				}
			}
			if err := st.RegistryBeat(ctx, "billing", back, back, "1", []string{"h"}); err != nil {
				t.Fatal(err)
			}

			waitUntil(t, "the grace to pass", func() bool { j, ok := e.JudgeSilence(3*heartbeat, heartbeat); return ok && j.From == 0 })
			// back is alive: it beats every heartbeat, as since the outage.
			if err := st.RegistryBeat(ctx, "billing", back, back, "1", []string{"h"}); err != nil {
				t.Fatal(err)
			}
			if err := sweep.run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := state(back); got != store.ExecRunning {
				t.Fatalf("run on the executor that beat after the outage: %s, want running", got)
			}
			if got := state(dead); got != store.ExecLost {
				t.Fatalf("run on the executor silent past the grace: %s, want lost", got)
			}
			retry := waitFor(t, "the lost run's retry to run", ran)
			if retry.Cause != store.CauseRetry || retry.JobID != runs[dead].JobID {
				t.Fatalf("the engine ran %+v, want the retry of the run on %s", retry, dead)
			}
			if err := e.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			close(ran)
			for x := range ran {
				t.Errorf("the engine also ran %+v: want only the one retry", x)
			}
		})
	}
}

// TestExecutorSweepHeldThroughCut: the leader starts a sweep as a partition from the
// database begins, when its own view still allows it to judge; the network holds the sweep's
// statements and delivers them when the partition heals, longer than an executor may stay
// silent later. By then the executor is silent only because its beats could not be written:
// the database's answer must not be acted on, and its run stays running.
func TestExecutorSweepHeldThroughCut(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, proxy := teststore.OpenProxied(t, dialect)
			e := startedEngine(t, st, make(ledger, 16), 500*time.Millisecond, 2*time.Second)

			const heartbeat = time.Second
			const addr = "http://10.0.0.1:9999"
			run := runningOn(t, st, "remote", addr, 1)
			sweep := ExecutorSweep(e, st, heartbeat, func(string) bool { return false }, nil, nil, testLogger(t))
			waitUntil(t, "the leader to judge silences", func() bool { _, ok := e.JudgeSilence(3*heartbeat, heartbeat); return ok })
			if err := st.RegistryBeat(ctx, "billing", addr, addr, "1", []string{"h"}); err != nil {
				t.Fatal(err)
			}

			if err := proxy.Hold(); err != nil {
				t.Fatal(err)
			}
			if _, ok := e.JudgeSilence(3*heartbeat, heartbeat); !ok {
				t.Fatal("the leader may not judge as the partition begins: the test cannot tell")
			}
			swept := make(chan error, 1)
			go func() { swept <- sweep.run(ctx) }()
			// Longer than the executor may stay silent: the fault's length.
			time.Sleep(3*heartbeat + 500*time.Millisecond)
			select {
			case err := <-swept:
				t.Fatalf("the sweep ended during the partition (%v): the network did not hold it", err)
			default:
			}
			if err := proxy.Release(); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(t, "the held sweep to end", swept); err != nil {
				t.Fatalf("the sweep held through the partition: %v (want its statements answered after it)", err)
			}
			x, err := st.ExecutionGet(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if x.State != store.ExecRunning {
				t.Fatalf("run on the executor after the held sweep: %s, want running (its executor was silent only through the partition)", x.State)
			}
			live, err := st.RegistryLive(ctx, "billing", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if len(live) != 1 || live[0].Address != addr {
				t.Fatalf("registry after the held sweep: %v, want the executor kept", live)
			}
		})
	}
}

// runningOn inserts a job of app billing named name with maxRetries, and a run of it running
// on the executor at addr.
func runningOn(t *testing.T, st store.Store, name, addr string, maxRetries int) *store.Execution {
	t.Helper()
	ctx := context.Background()
	job := &store.Job{Group: "g", Name: name, TargetKind: store.TargetRemote, App: "billing", Handler: "h",
		Concurrency: store.ConcurrencyAllow, Enabled: true, MaxRetries: maxRetries}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	run := &store.Execution{JobID: job.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseManual,
		State: store.ExecRunning, ExecutorAddress: addr, ExecutorApp: "billing"}
	if dups, err := st.ExecutionsInsert(ctx, []*store.Execution{run}); err != nil || len(dups) > 0 {
		t.Fatalf("insert the run on %s: %v (%d refused)", addr, err, len(dups))
	}
	return run
}

// startedEngine starts node n1's engine on st, stopped when t ends.
func startedEngine(t *testing.T, st store.Store, d engine.Dispatcher, heartbeat, nodeTimeout time.Duration) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Store: st, Dispatcher: d, NodeID: "n1", Logger: testLogger(t),
		HeartbeatInterval: heartbeat, NodeTimeout: nodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

// waitUntil polls cond until it holds, failing after a generous real-time limit that only
// catches a hung test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecutorSweepReleasesUnregistered: an executor instance that holds sub-tasks without a
// registration (it claimed without registering, or the sweep forgot it before it claimed)
// would hold them for ever: nobody would release them, and their map would never end. The
// sweep puts them back to pending; a registered instance keeps its own, and a late result of
// the unregistered one is refused.
func TestExecutorSweepReleasesUnregistered(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			e := startedEngine(t, st, make(ledger, 1), 20*time.Millisecond, time.Second)

			job := &store.Job{Group: "g", Name: "map", TargetKind: store.TargetRemote, App: "billing", Handler: "h",
				Concurrency: store.ConcurrencyAllow, Enabled: true}
			if err := st.JobInsert(ctx, job); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixMilli()
			run := &store.Execution{JobID: job.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseManual, State: store.ExecRunning}
			if _, err := st.ExecutionsInsert(ctx, []*store.Execution{run}); err != nil {
				t.Fatal(err)
			}
			const key = "executor:billing:h"
			ts := []*store.Subtask{{Depth: 1, Seq: 0}, {Depth: 1, Seq: 1}, {Depth: 1, Seq: 2}}
			if _, err := st.SubtasksMap(ctx, &store.SubtaskMap{ExecutionID: run.ID, JobID: job.ID, Handler: key}, ts, 0); err != nil {
				t.Fatal(err)
			}
			// registered beats at its own pace (an hour): the sweep does not find it silent.
			if err := st.RegistryBeatFor(ctx, "billing", "http://10.0.0.1:9999", "registered", []string{"h"}, time.Hour); err != nil {
				t.Fatal(err)
			}
			registered, ghost := engine.ExecutorSubtaskOwner("registered"), engine.ExecutorSubtaskOwner("ghost")
			mine, err := st.SubtasksClaim(ctx, registered, []string{key}, 1)
			if err != nil || len(mine) != 1 {
				t.Fatalf("claim as the registered instance: %v, %v", mine, err)
			}
			held, err := st.SubtasksClaim(ctx, ghost, []string{key}, 2)
			if err != nil || len(held) != 2 {
				t.Fatalf("claim as the unregistered instance: %v, %v", held, err)
			}

			const heartbeat = 50 * time.Millisecond
			sweep := ExecutorSweep(e, st, heartbeat, func(string) bool { return false }, nil, nil, testLogger(t))
			waitUntil(t, "the leader to judge silences", func() bool { _, ok := e.JudgeSilence(3*heartbeat, heartbeat); return ok })
			if err := sweep.run(ctx); err != nil {
				t.Fatal(err)
			}
			counts, err := st.SubtaskCounts(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if counts[store.SubtaskPending] != 2 || counts[store.SubtaskRunning] != 1 {
				t.Fatalf("sub-tasks after the sweep: %v, want the unregistered instance's 2 pending and the registered one's running", counts)
			}
			owners, err := st.SubtaskOwners(ctx, engine.ExecutorSubtaskOwner(""))
			if err != nil || len(owners) != 1 || owners[0] != registered {
				t.Fatalf("owners after the sweep: %v, %v; want only the registered instance", owners, err)
			}
			late := make([]store.SubtaskResult, len(held))
			for i, s := range held {
				late[i] = store.SubtaskResult{ID: s.ID, Attempt: s.Attempt, Owner: ghost, State: store.SubtaskSucceeded}
			}
			if got, err := st.SubtasksComplete(ctx, late); err != nil || len(got) != 0 {
				t.Fatalf("the unregistered instance's late results: accepted %v (%v), want none", got, err)
			}
		})
	}
}
