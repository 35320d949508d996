package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// MapConfig is the map scenario: one run maps Subtasks sub-tasks, run by Executors nodes
// sharing the store (each with its own connection pool and sub-task runner).
type MapConfig struct {
	Subtasks  int
	Executors int
	Workers   int // sub-tasks running at once per node (sundial.MapConfig.Workers)
	Batch     int // sub-tasks per claim and per result write
}

// MapResult is what the map scenario measured. A ledger outside the database counts each
// payload's runs that returned a result: Duplicates and Missing must be 0.
type MapResult struct {
	Subtasks   int           `json:"subtasks"`
	Executors  int           `json:"executors"`
	MapInsert  time.Duration `json:"map_insert_ns"` // Start's Map call: the batched inserts
	Total      time.Duration `json:"total_ns"`      // trigger → reduce done
	PerSecond  float64       `json:"subtasks_per_s"`
	Duplicates int           `json:"duplicates"`
	Missing    int           `json:"missing"`
	Reduced    int64         `json:"reduced_results"`
	Statements int64         `json:"statements"`
}

func (r MapResult) String() string {
	return fmt.Sprintf("map: %d sub-tasks over %d executors in %v (map insert %v): %.0f sub-tasks/s; reduced %d; duplicates %d, missing %d; %.2f statements per sub-task",
		r.Subtasks, r.Executors, r.Total.Round(time.Millisecond), r.MapInsert.Round(time.Millisecond), r.PerSecond, r.Reduced, r.Duplicates, r.Missing,
		float64(r.Statements)/float64(max(r.Subtasks, 1)))
}

// Map runs the map scenario on opts.DSN.
func Map(ctx context.Context, opts Options, cfg MapConfig) (MapResult, error) {
	res := MapResult{Subtasks: cfg.Subtasks, Executors: cfg.Executors}
	ledger := make([]int32, cfg.Subtasks)
	var mu sync.Mutex
	var insert time.Duration
	reduced := make(chan int64, 1)
	mr := sundial.MapReduce{
		Start: func(ctx context.Context) error {
			ps := make([]json.RawMessage, cfg.Subtasks)
			for i := range ps {
				ps[i] = json.RawMessage(strconv.Itoa(i))
			}
			t0 := time.Now()
			err := sundial.Map(ctx, ps)
			// Under mu: the reduce that ends the wait follows this through the database,
			// which orders nothing for the race detector.
			mu.Lock()
			insert = time.Since(t0)
			mu.Unlock()
			return err
		},
		Task: func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
			i, err := strconv.Atoi(string(p))
			if err != nil || i < 0 || i >= len(ledger) {
				return nil, fmt.Errorf("payload %s", p)
			}
			mu.Lock()
			ledger[i]++
			mu.Unlock()
			return p, nil
		},
		Reduce: func(ctx context.Context, rs *sundial.MapResults) error {
			var n int64
			err := rs.Each(ctx, func(sundial.SubtaskResult) error { n++; return nil })
			reduced <- n
			return err
		},
	}
	var stores []*sqlstore.Store
	var nodes []*sundial.Scheduler
	defer func() {
		for _, s := range nodes {
			s.Stop(context.Background())
		}
		for _, st := range stores {
			st.Close()
		}
	}()
	name := fmt.Sprintf("bench-map-%d", time.Now().UnixNano())
	for i := range max(cfg.Executors, 1) {
		st, err := sqlstore.Open(ctx, opts.DSN)
		if err != nil {
			return res, err
		}
		stores = append(stores, st)
		if i == 0 {
			if err := st.Migrate(ctx); err != nil {
				return res, err
			}
		}
		s, err := sundial.New(sundial.Config{Store: st, NodeID: fmt.Sprintf("%s-%d", name, i), Logger: opts.Logger,
			MapReduce: sundial.MapConfig{Workers: cfg.Workers, Batch: cfg.Batch, MaxSubtasks: int64(cfg.Subtasks)}})
		if err != nil {
			return res, err
		}
		s.RegisterMapReduce(name, mr)
		if err := s.Start(ctx); err != nil {
			return res, err
		}
		nodes = append(nodes, s)
	}
	id, err := nodes[0].ScheduleJob(ctx, sundial.Job{Name: name, Handler: name})
	if err != nil {
		return res, err
	}
	before := stores[0].Stats().Statements
	for _, st := range stores[1:] {
		before += st.Stats().Statements
	}
	t0 := time.Now()
	if _, err := nodes[0].TriggerNow(ctx, id); err != nil {
		return res, err
	}
	select {
	case res.Reduced = <-reduced:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.Total = time.Since(t0)
	mu.Lock()
	res.MapInsert = insert
	for _, c := range ledger {
		switch {
		case c == 0:
			res.Missing++
		case c > 1:
			res.Duplicates++
		}
	}
	mu.Unlock()
	var after int64
	for _, st := range stores {
		after += st.Stats().Statements
	}
	res.Statements = after - before
	res.PerSecond = float64(cfg.Subtasks) / res.Total.Seconds()
	return res, nil
}
