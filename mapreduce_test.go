package sundial_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestMapReduce runs a map of 600 sub-tasks over two nodes on every database: a sub-task
// maps further (depth 2), one at depth 2 is refused a third level with ErrMapLimit, one fails
// once and succeeds on its retry, each sub-task's accepted run is counted once in a ledger
// kept outside the database, and the reduce sees every result and ends the run succeeded.
func TestMapReduce(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st := teststore.Open(t, dialect)
			ctx := context.Background()
			const n = 600
			var mu sync.Mutex
			ran := map[string]int{} // payload → attempts that returned a result
			var limitErr error      // what a depth-3 map was told
			failedOnce := false     // payload "7" fails its first attempt
			reduced := make(chan []int, 1)
			mr := sundial.MapReduce{
				Start: func(ctx context.Context) error {
					ps := make([]json.RawMessage, n)
					for i := range ps {
						ps[i] = json.RawMessage(strconv.Itoa(i))
					}
					sundial.Logger(ctx).Info("mapping", "n", n)
					return sundial.Map(ctx, ps)
				},
				Task: func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
					sub := sundial.SubtaskFrom(ctx)
					mu.Lock()
					defer mu.Unlock()
					if string(p) == "7" && !failedOnce {
						failedOnce = true
						return nil, errors.New("first attempt fails")
					}
					if string(p) == "0" && sub.Depth == 1 {
						if err := sundial.Map(ctx, []json.RawMessage{json.RawMessage(`1000`), json.RawMessage(`1001`)}); err != nil {
							return nil, err
						}
					}
					if string(p) == "1000" {
						limitErr = sundial.Map(ctx, []json.RawMessage{json.RawMessage(`2000`)})
					}
					ran[string(p)]++
					v, _ := strconv.Atoi(string(p))
					return json.RawMessage(strconv.Itoa(v * 2)), nil
				},
				Reduce: func(ctx context.Context, rs *sundial.MapResults) error {
					// The run waits for its reduce, holding no worker.
					if x, err := st.ExecutionGet(ctx, rs.ExecutionID); err != nil || x.State != store.ExecRunning {
						return fmt.Errorf("the run at its reduce: %v, %v; want running", x.State, err)
					}
					var got []int
					err := rs.Each(ctx, func(r sundial.SubtaskResult) error {
						if r.Failed {
							return fmt.Errorf("sub-task %d failed: %s", r.ID, r.Message)
						}
						v, _ := strconv.Atoi(string(r.Result))
						got = append(got, v)
						return nil
					})
					if err != nil {
						got = nil
					}
					reduced <- got
					return err
				},
			}
			var nodes []*sundial.Scheduler
			for i := range 2 {
				s, err := sundial.New(sundial.Config{Store: st, NodeID: fmt.Sprintf("n%d", i),
					MapReduce: sundial.MapConfig{Workers: 8, Batch: 50, PollInterval: 50 * time.Millisecond, MaxDepth: 2}})
				if err != nil {
					t.Fatal(err)
				}
				s.RegisterMapReduce("double", mr)
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, s)
			}
			id, err := nodes[0].ScheduleJob(ctx, sundial.Job{Name: "mr", Handler: "double", MaxRetries: 1})
			if err != nil {
				t.Fatal(err)
			}
			xid, err := nodes[0].TriggerNow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			select {
			case got = <-reduced:
			case <-time.After(60 * time.Second):
				t.Fatal("no reduce within 60 s")
			}
			// Stop waits for the runner, which completes the run once its reduce returned.
			for _, s := range nodes {
				if err := s.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != n+2 {
				t.Fatalf("reduce saw %d results, want %d", len(got), n+2)
			}
			sum := 0
			for _, v := range got {
				sum += v
			}
			if want := 2 * (n*(n-1)/2 + 1000 + 1001); sum != want {
				t.Fatalf("sum of results %d, want %d", sum, want)
			}
			if len(ran) != n+2 {
				t.Fatalf("%d payloads ran, want %d", len(ran), n+2)
			}
			for p, c := range ran {
				if c != 1 {
					t.Fatalf("payload %s ran to a result %d times", p, c)
				}
			}
			if !errors.Is(limitErr, sundial.ErrMapLimit) {
				t.Fatalf("a map at depth 3: %v, want ErrMapLimit", limitErr)
			}
			x, err := st.ExecutionGet(ctx, xid)
			if err != nil {
				t.Fatal(err)
			}
			if x.State != store.ExecSucceeded {
				t.Fatalf("the run is %s (%s), want succeeded", x.State, x.HandleMsg)
			}
			lines, err := st.ExecutionLogList(ctx, xid, 0, 10)
			if err != nil || len(lines) != 1 || !strings.Contains(lines[0].Message, "mapping") {
				t.Fatalf("the run's output: %+v (%v), want Start's line", lines, err)
			}
			counts, err := st.SubtaskCounts(ctx, xid)
			if err != nil {
				t.Fatal(err)
			}
			if counts[store.SubtaskSucceeded] != n+2 || len(counts) != 1 {
				t.Fatalf("sub-task counts %v", counts)
			}
		})
	}
}

// TestMapReduceKilledNode kills, with SIGKILL, a node process in the middle of a map it
// started (it holds the run and a batch of running sub-tasks), then starts two survivor
// nodes. Once the victim is declared dead its sub-tasks are claimed again and the survivors
// finish the map and reduce it. A ledger kept outside the database (the victim's stdout and
// the survivors' memory) records every run of every sub-task with a token the run returns:
// each sub-task's accepted result is the token of exactly one run in the ledger, every
// payload succeeded, the run ended succeeded, and only the sub-tasks the victim held when it
// died ran twice.
func TestMapReduceKilledNode(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := testdb.DSN(t, dialect)
			st := teststore.OpenDSN(t, dsn)
			admin, err := sundial.New(sundial.Config{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			id, err := admin.ScheduleJob(ctx, sundial.Job{Name: "ledger", Handler: "ledger", MaxRetries: 2})
			if err != nil {
				t.Fatal(err)
			}
			xid, err := admin.TriggerNow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "SUNDIAL_MAP_CHILD_DSN="+dsn)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			runs := map[string][]string{} // payload → tokens of its runs
			tokens := map[string]int{}
			lines := bufio.NewScanner(out)
			for lines.Scan() {
				var p, token string
				if _, err := fmt.Sscanf(lines.Text(), "RAN %s %s", &p, &token); err == nil {
					runs[p] = append(runs[p], token)
					tokens[token]++
				}
				if len(tokens) == 300 { // well into the map: kill it
					break
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			// Lines the victim wrote before it died are in its ledger too.
			for lines.Scan() {
				var p, token string
				if _, err := fmt.Sscanf(lines.Text(), "RAN %s %s", &p, &token); err == nil {
					runs[p] = append(runs[p], token)
					tokens[token]++
				}
			}
			victimHeld, err := st.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: xid, State: store.SubtaskRunning, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			reduced := make(chan int64, 2)
			mr := sundial.MapReduce{
				Start: sundial.MapTestStart(3000),
				Reduce: func(ctx context.Context, rs *sundial.MapResults) error {
					reduced <- rs.Total
					return nil
				},
			}
			var nodes []*sundial.Scheduler
			for i := range 2 {
				name := fmt.Sprintf("survivor%d", i)
				mr.Task = sundial.MapLedgerTask(name, func(l string) {
					var p, token string
					fmt.Sscanf(l, "RAN %s %s", &p, &token)
					mu.Lock()
					runs[p] = append(runs[p], token)
					tokens[token]++
					mu.Unlock()
				})
				s, err := sundial.New(sundial.Config{Store: st, NodeID: name, Engine: sundial.MapTestEngine,
					MapReduce: sundial.MapConfig{Workers: 16, Batch: 50, PollInterval: 50 * time.Millisecond}})
				if err != nil {
					t.Fatal(err)
				}
				s.RegisterMapReduce("ledger", mr)
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, s)
			}
			select {
			case total := <-reduced:
				if total != 3000 {
					t.Errorf("reduced a map of %d sub-tasks, want 3000", total)
				}
			case <-time.After(90 * time.Second):
				t.Fatal("no reduce within 90 s")
			}
			for _, s := range nodes {
				if err := s.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}

			x, err := st.ExecutionGet(ctx, xid)
			if err != nil {
				t.Fatal(err)
			}
			if x.State != store.ExecSucceeded {
				t.Fatalf("the run is %s (%s), want succeeded", x.State, x.HandleMsg)
			}
			all, err := st.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: xid, Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 3000 {
				t.Fatalf("%d sub-tasks stored, want 3000", len(all))
			}
			twice := 0
			for _, s := range all {
				var token string
				if s.State != store.SubtaskSucceeded || json.Unmarshal([]byte(s.Result), &token) != nil {
					t.Fatalf("sub-task %d (payload %s) is %s with result %q", s.ID, s.Payload, s.State, s.Result)
				}
				if tokens[token] != 1 || !slices.Contains(runs[s.Payload], token) {
					t.Fatalf("sub-task %d (payload %s): accepted result %s is in the ledger %d times (runs %v)", s.ID, s.Payload, token, tokens[token], runs[s.Payload])
				}
				if len(runs[s.Payload]) > 1 {
					twice++
				}
			}
			if twice > len(victimHeld) {
				t.Fatalf("%d sub-tasks ran twice, but the victim held only %d when it died", twice, len(victimHeld))
			}
			t.Logf("victim ran %d, held %d when killed; %d ran again", 300, len(victimHeld), twice)
		})
	}
}
