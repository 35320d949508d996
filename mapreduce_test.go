package sundial_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
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
