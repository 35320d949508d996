package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestStreamFailoverSIGKILL: two `sundial server` processes on PostgreSQL, one SDK executor on
// the stream transport holding a stream to each. Mid-load the node the executor reports to
// first is killed with SIGKILL. The ledger the handler keeps (outside the database) shows
// every fire of the window ran exactly once: results of runs the dead node handed over go up
// the other stream and are taken once, runs it had not handed over are recovered, and none is
// lost or run twice.
func TestStreamFailoverSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two servers")
	}
	dsn := testdb.DSN(t, "postgres")
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	const token = "stream-failover-executor-token"
	a := startServer(t, bin, dir, "SUNDIAL_DB="+dsn, "SUNDIAL_EXECUTOR_TOKEN="+token)
	b := startServer(t, bin, dir, "SUNDIAL_DB="+dsn, "SUNDIAL_EXECUTOR_TOKEN="+token)

	ctx := context.Background()
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var mu sync.Mutex
	ledger := map[string]int{} // idempotency key → runs started
	ex, err := executor.New(executor.Config{Servers: []string{a.url, b.url}, Token: token, App: "ledger",
		Transport: executor.TransportStream, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("count", func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		mu.Lock()
		ledger[run.IdempotencyKey]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // some runs are in flight when the node dies
		return nil
	})
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ex.Stop(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for ex.StreamsOpen() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want 2", ex.StreamsOpen())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// 20 jobs each firing every second for 8 s: the node dies 1.5 s in.
	start := time.Now().Add(500 * time.Millisecond).UnixMilli()
	end := start + 8000
	var jobs []int64
	want := map[string]bool{} // the fires of the window, by idempotency key
	for i := range 20 {
		j := &store.Job{Group: "g", Name: fmt.Sprintf("count-%d", i), TargetKind: store.TargetRemote, App: "ledger", Handler: "count",
			Routing: "round_robin", Concurrency: store.ConcurrencyAllow, Enabled: true, RequestsRecovery: true}
		if err := st.JobInsert(ctx, j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j.ID)
		tr := &store.Trigger{JobID: j.ID, Group: "g", Name: fmt.Sprintf("every-%d", i), Kind: store.TriggerSimple,
			Spec: `{"interval_ms":1000}`, MisfirePolicy: schedule.MisfireSmart.String(), StartAt: start, EndAt: end, NextFireAt: start, State: store.TriggerWaiting}
		if err := st.TriggerInsert(ctx, tr); err != nil {
			t.Fatal(err)
		}
		for at := start; at < end; at += 1000 {
			want[fmt.Sprintf("j%d-t%d-%d-s0", j.ID, tr.ID, at)] = true
		}
	}
	time.Sleep(time.Until(time.UnixMilli(start + 1500)))
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()

	// Every fire of the window ran (the dead node's unaccepted ones once it is declared dead
	// and they are recovered), and nothing is left open that could still run.
	settled := time.Now().Add(2 * time.Minute)
	for {
		open := 0
		for _, id := range jobs {
			xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: id, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range xs {
				if !x.State.Terminal() {
					open++
				}
			}
		}
		mu.Lock()
		ran := 0
		for key := range want {
			if ledger[key] > 0 {
				ran++
			}
		}
		mu.Unlock()
		if open == 0 && ran == len(want) && time.Now().UnixMilli() > end+1000 {
			break
		}
		if time.Now().After(settled) {
			t.Fatalf("2 minutes on: %d executions open, %d of %d fires ran; node B's log:\n%s", open, ran, len(want), lastLines(b.stderr.String(), 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for key, n := range ledger {
		if n != 1 {
			t.Errorf("fire %s ran %d times", key, n)
		}
	}
	t.Logf("%d fires ran once each (%d in the window); node A killed 1.5 s in, node B %s went on", len(ledger), len(want), b.url)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
