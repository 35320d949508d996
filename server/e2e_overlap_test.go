package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// overlapLedger is what the executors' handlers saw, kept outside the database: the order in
// which runs started and ended, and the most runs of a job at once.
type overlapLedger struct {
	mu      sync.Mutex
	events  map[int64][]string // per job: "start ID@addr" / "end ID"
	running map[int64]int
	most    map[int64]int
	started map[int64]bool // execution ids
	gates   map[int64]chan struct{}
}

func newOverlapLedger() *overlapLedger {
	return &overlapLedger{events: map[int64][]string{}, running: map[int64]int{}, most: map[int64]int{},
		started: map[int64]bool{}, gates: map[int64]chan struct{}{}}
}

func (l *overlapLedger) gate(job int64) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gates[job]
	if g == nil {
		g = make(chan struct{})
		l.gates[job] = g
	}
	return g
}

// handler holds each run until its job's gate opens (or its context ends: a kill).
func (l *overlapLedger) handler(addr func() string) executor.Handler {
	return func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		l.mu.Lock()
		l.running[run.JobID]++
		l.most[run.JobID] = max(l.most[run.JobID], l.running[run.JobID])
		l.started[run.ExecutionID] = true
		l.events[run.JobID] = append(l.events[run.JobID], fmt.Sprintf("start %d@%s", run.ExecutionID, addr()))
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.running[run.JobID]--
			l.events[run.JobID] = append(l.events[run.JobID], fmt.Sprintf("end %d", run.ExecutionID))
			l.mu.Unlock()
		}()
		select {
		case <-l.gate(run.JobID):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *overlapLedger) hasStarted(id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started[id]
}

// timeline is the job's events with the executor addresses left out, and the most runs at once.
func (l *overlapLedger) timeline(job int64) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events[job] {
		out = append(out, strings.Split(ev, "@")[0])
	}
	return out, l.most[job]
}

// places is where the job's runs started, in order.
func (l *overlapLedger) places(job int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events[job] {
		if _, at, ok := strings.Cut(ev, "@"); ok {
			out = append(out, at)
		}
	}
	return out
}

// TestRemoteOverlapAcrossInstances: a remote job's overlap policy holds for its whole app, not
// per executor instance. The app has two real SDK executors, one pushed to over HTTP and one
// on the stream transport, and the job routes round robin, so consecutive fires would land on
// different instances, each of which alone sees no overlap. The timelines are those of
// TestOverlapPolicies (docs/policies.md, "Overlap"), in the order of events the executors'
// handlers saw (a ledger outside the database): skip runs the first fire only; buffer_all
// runs the three one after the other; at_most 2 runs two at once and the third when one
// ends; terminate stops each run on its executor for the next.
func TestRemoteOverlapAcrossInstances(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newExecutorEnv(t, dialect, time.Second)
		led := newOverlapLedger()
		for _, transport := range []string{executor.TransportPush, executor.TransportStream} {
			cfg := executor.Config{Server: e.url, Token: execToken, App: "pool", Transport: transport,
				SpoolDir: t.TempDir(), HeartbeatInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
			if transport == executor.TransportPush {
				cfg.Listen = freeAddr(t)
			}
			ex, err := executor.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ex.Handle("work", led.handler(ex.Address))
			if err := ex.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = ex.Stop(ctx)
			})
		}
		eventually(t, "two executors to be listed", func() bool {
			var n struct {
				Items []struct{ Address string } `json:"items"`
			}
			e.call("GET", "/api/v1/executors?app=pool", nil, 200, &n)
			return len(n.Items) == 2
		})
		eng := e.srv.sched.Engine()
		job := func(policy store.ConcurrencyPolicy, most int) int64 {
			return e.remoteJob("pool", "round_robin", func(j *store.Job) {
				j.Name, j.Handler, j.Concurrency, j.MaxConcurrent = string(policy), "work", policy, most
			})
		}
		fire := func(job int64) int64 {
			t.Helper()
			var x struct{ ID int64 }
			e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &x)
			return x.ID
		}
		await := func(t *testing.T, id int64, state string) {
			t.Helper()
			eventually(t, fmt.Sprintf("execution %d to be %s", id, state), func() bool { return e.execution(id).State == state })
		}
		started := func(t *testing.T, id int64) {
			t.Helper()
			eventually(t, fmt.Sprintf("execution %d to start on an executor", id), func() bool { return led.hasStarted(id) })
		}
		// waits reports that the fire id was left waiting for the job's runs (the engine's
		// Busy count grew) rather than started on the other instance.
		waits := func(t *testing.T, id int64) {
			t.Helper()
			before := eng.Stats().Busy.Load()
			eventually(t, fmt.Sprintf("execution %d to wait or start", id), func() bool {
				return eng.Stats().Busy.Load() > before || led.hasStarted(id)
			})
			if led.hasStarted(id) {
				t.Fatalf("execution %d started beside the job's running fire on another instance", id)
			}
		}
		check := func(t *testing.T, job int64, wantEvents []string, wantMost int, states map[int64]string) {
			t.Helper()
			for id, st := range states {
				await(t, id, st)
			}
			got, most := led.timeline(job)
			if !slices.Equal(got, wantEvents) || most != wantMost {
				t.Errorf("handlers saw %v (at most %d at once), want %v (%d)", got, most, wantEvents, wantMost)
			}
		}
		ev := func(format string, ids ...int64) []string {
			var out []string
			for _, f := range strings.Split(format, ",") {
				var kind string
				var i int
				fmt.Sscanf(f, "%s %d", &kind, &i)
				out = append(out, fmt.Sprintf("%s %d", kind, ids[i-1]))
			}
			return out
		}

		t.Run("skip", func(t *testing.T) {
			j := job(store.ConcurrencySkip, 0)
			x1 := fire(j)
			started(t, x1)
			x2 := fire(j)
			await(t, x2, "skipped")
			x3 := fire(j)
			await(t, x3, "skipped")
			close(led.gate(j))
			check(t, j, ev("start 1,end 1", x1), 1, map[int64]string{x1: "succeeded"})
		})
		t.Run("buffer_all", func(t *testing.T) {
			j := job(store.ConcurrencyBufferAll, 0)
			x1 := fire(j)
			started(t, x1)
			x2 := fire(j)
			waits(t, x2)
			x3 := fire(j)
			close(led.gate(j))
			check(t, j, ev("start 1,end 1,start 2,end 2,start 3,end 3", x1, x2, x3), 1,
				map[int64]string{x1: "succeeded", x2: "succeeded", x3: "succeeded"})
		})
		t.Run("at_most_2", func(t *testing.T) {
			j := job(store.ConcurrencyAtMost, 2)
			x1 := fire(j)
			started(t, x1)
			x2 := fire(j)
			started(t, x2)
			if p := led.places(j); len(p) != 2 || p[0] == p[1] {
				t.Fatalf("the first two runs ran on %v, want one on each instance (round robin)", p)
			}
			x3 := fire(j)
			waits(t, x3)
			close(led.gate(j))
			for _, id := range []int64{x1, x2, x3} {
				await(t, id, "succeeded")
			}
			got, most := led.timeline(j)
			if most != 2 || len(got) != 6 || got[2] == fmt.Sprintf("start %d", x3) {
				t.Errorf("handlers saw %v (at most %d at once), want the third to start after an end, two at most", got, most)
			}
		})
		t.Run("terminate", func(t *testing.T) {
			j := job(store.ConcurrencyTerminate, 0)
			x1 := fire(j)
			started(t, x1)
			x2 := fire(j)
			await(t, x1, "canceled")
			started(t, x2)
			x3 := fire(j)
			await(t, x2, "canceled")
			started(t, x3)
			close(led.gate(j))
			check(t, j, ev("start 1,end 1,start 2,end 2,start 3,end 3", x1, x2, x3), 1,
				map[int64]string{x1: "canceled", x2: "canceled", x3: "succeeded"})
		})
	})
}
