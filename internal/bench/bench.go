// Package bench runs Sundial's standard performance scenarios against a store and reports
// throughput, lateness and correctness (duplicates and missing fires) of what fired.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// SteadyConfig describes the steady scenario: Triggers simple triggers, each firing every
// Interval, spread evenly over the interval, measured for Duration after Warmup.
type SteadyConfig struct {
	Triggers int
	Interval time.Duration
	Warmup   time.Duration
	Duration time.Duration
	// Nodes is how many engines share the store in this process. Default 1.
	Nodes int
	// Engine tunes the engines (batch size, look-ahead, ...); Store, Dispatcher and NodeID
	// are set by the scenario.
	Engine engine.Config
	Logger *slog.Logger
}

// Result is what a scenario measured.
type Result struct {
	Scenario    string        `json:"scenario"`
	Triggers    int           `json:"triggers"`
	Nodes       int           `json:"nodes"`
	Demanded    float64       `json:"demanded_fires_per_s"`
	Achieved    float64       `json:"achieved_fires_per_s"`
	P50         time.Duration `json:"lateness_p50_ns"`
	P99         time.Duration `json:"lateness_p99_ns"`
	P999        time.Duration `json:"lateness_p999_ns"`
	Max         time.Duration `json:"lateness_max_ns"`
	Misfires    int64         `json:"misfires"`
	Duplicates  int           `json:"duplicates"`
	Missing     int           `json:"missing"`
	InsertRate  float64       `json:"insert_per_s"`
	MeasuredFor time.Duration `json:"measured_ns"`
}

func (r Result) String() string {
	return fmt.Sprintf("%-8s triggers=%d nodes=%d demanded=%.0f/s achieved=%.1f/s lateness p50=%s p99=%s p99.9=%s max=%s misfires=%d duplicates=%d missing=%d insert=%.0f/s",
		r.Scenario, r.Triggers, r.Nodes, r.Demanded, r.Achieved, ms(r.P50), ms(r.P99), ms(r.P999), ms(r.Max),
		r.Misfires, r.Duplicates, r.Missing, r.InsertRate)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// fire is one handler start the recorder saw.
type fire struct {
	trigger     int64
	scheduledAt int64
	startedAt   int64 // unix ns
}

// recorder is the scenario's dispatcher: it notes every fire and returns at once.
type recorder struct {
	mu    sync.Mutex
	fires []fire
}

func (r *recorder) Dispatch(_ context.Context, f *engine.Fire) engine.Result {
	now := time.Now().UnixNano()
	r.mu.Lock()
	r.fires = append(r.fires, fire{f.Execution.TriggerID, f.Execution.ScheduledAt, now})
	r.mu.Unlock()
	return engine.Result{}
}

// Steady runs the steady scenario on st, which must be migrated and may be shared with
// other runs: the scenario's job has a name of its own and is deleted at the end.
func Steady(ctx context.Context, open func() (store.Store, error), cfg SteadyConfig) (Result, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	res := Result{Scenario: "steady", Triggers: cfg.Triggers, Nodes: cfg.Nodes,
		Demanded: float64(cfg.Triggers) * float64(time.Second) / float64(cfg.Interval)}
	var stores []store.Store
	defer func() {
		for _, st := range stores {
			st.Close()
		}
	}()
	for range cfg.Nodes {
		st, err := open()
		if err != nil {
			return res, err
		}
		stores = append(stores, st)
	}

	// Insert the triggers, then start the window late enough that inserting never eats it.
	insertStart := time.Now()
	job, triggerIDs, err := insertSteady(ctx, stores[0], cfg, insertStart.Add(time.Hour))
	if err != nil {
		return res, err
	}
	defer stores[0].JobDelete(context.Background(), job.ID)
	res.InsertRate = float64(cfg.Triggers) / time.Since(insertStart).Seconds()
	// Like Quartz's harness, refresh the planner's statistics after the bulk insert.
	if a, ok := stores[0].(interface{ Analyze(context.Context) error }); ok {
		if err := a.Analyze(ctx); err != nil {
			return res, err
		}
	}
	t0 := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if err := shiftSteady(ctx, stores[0], triggerIDs, t0, cfg); err != nil {
		return res, err
	}

	rec := &recorder{fires: make([]fire, 0, int(res.Demanded*(cfg.Warmup+cfg.Duration+5*time.Second).Seconds()))}
	var engines []*engine.Engine
	for i, st := range stores {
		ec := cfg.Engine
		ec.Store, ec.Dispatcher, ec.NodeID, ec.Logger = st, rec, fmt.Sprintf("bench-%d-%d", i, t0.Unix()), cfg.Logger
		e, err := engine.New(ec)
		if err != nil {
			return res, err
		}
		if err := e.Start(ctx); err != nil {
			return res, err
		}
		engines = append(engines, e)
	}
	windowStart := t0.Add(cfg.Warmup)
	windowEnd := windowStart.Add(cfg.Duration)
	select {
	case <-time.After(time.Until(windowEnd.Add(2 * time.Second))):
	case <-ctx.Done():
	}
	var stopErr error
	var misfires atomic.Int64
	for _, e := range engines {
		misfires.Add(e.Stats().Misfired.Load())
		if err := e.Stop(context.Background()); err != nil {
			stopErr = err
		}
	}
	res.Misfires = misfires.Load()
	res.MeasuredFor = cfg.Duration
	rec.mu.Lock()
	defer rec.mu.Unlock()
	analyse(&res, rec.fires, triggerIDs, t0, cfg, windowStart, windowEnd)
	return res, stopErr
}

// analyse computes the figures over the fires scheduled inside the window.
func analyse(res *Result, fires []fire, triggerIDs []int64, t0 time.Time, cfg SteadyConfig, from, to time.Time) {
	seen := make(map[[2]int64]int, len(fires))
	var late []time.Duration
	started := 0
	for _, f := range fires {
		seen[[2]int64{f.trigger, f.scheduledAt}]++
		at := time.UnixMilli(f.scheduledAt)
		if !at.Before(from) && at.Before(to) {
			late = append(late, time.Duration(f.startedAt-f.scheduledAt*int64(time.Millisecond)))
		}
		if s := time.Unix(0, f.startedAt); !s.Before(from) && s.Before(to) {
			started++
		}
	}
	for _, n := range seen {
		if n > 1 {
			res.Duplicates += n - 1
		}
	}
	for i, id := range triggerIDs {
		first := t0.Add(time.Duration(i) * cfg.Interval / time.Duration(len(triggerIDs)))
		for at := first; at.Before(to); at = at.Add(cfg.Interval) {
			if !at.Before(from) && seen[[2]int64{id, at.UnixMilli()}] == 0 {
				res.Missing++
			}
		}
	}
	res.Achieved = float64(started) / cfg.Duration.Seconds()
	if len(late) > 0 {
		slices.Sort(late)
		pct := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
		res.P50, res.P99, res.P999, res.Max = pct(0.50), pct(0.99), pct(0.999), late[len(late)-1]
	}
}

// insertSteady stores the scenario's job and triggers (their first fires far in the future,
// so nothing fires while the rest are inserted).
func insertSteady(ctx context.Context, st store.Store, cfg SteadyConfig, parked time.Time) (*store.Job, []int64, error) {
	tx, err := st.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	job := &store.Job{Group: "bench", Name: fmt.Sprintf("steady-%d", time.Now().UnixNano()), TargetKind: store.TargetLocal,
		Handler: "noop", Concurrency: store.ConcurrencyAllow, Enabled: true}
	if err := tx.JobInsert(ctx, job); err != nil {
		return nil, nil, err
	}
	spec := schedule.EncodeSpec(schedule.Simple{Interval: cfg.Interval, RepeatCount: schedule.RepeatForever})
	ids := make([]int64, cfg.Triggers)
	for i := range cfg.Triggers {
		tr := &store.Trigger{JobID: job.ID, Group: job.Name, Name: fmt.Sprintf("t%d", i), Kind: store.TriggerSimple,
			Spec: spec, TimeZone: "UTC", StartAt: parked.UnixMilli(), Priority: 5, MisfirePolicy: "smart",
			State: store.TriggerWaiting, NextFireAt: parked.UnixMilli()}
		if err := tx.TriggerInsert(ctx, tr); err != nil {
			return nil, nil, err
		}
		ids[i] = tr.ID
	}
	return job, ids, tx.Commit()
}

// shiftSteady moves every trigger's start to its slot after t0.
func shiftSteady(ctx context.Context, st store.Store, ids []int64, t0 time.Time, cfg SteadyConfig) error {
	updates := make([]store.TriggerFireUpdate, len(ids))
	for i, id := range ids {
		first := t0.Add(time.Duration(i) * cfg.Interval / time.Duration(len(ids))).UnixMilli()
		updates[i] = store.TriggerFireUpdate{ID: id, NextFireAt: first, StartAt: first, State: store.TriggerWaiting}
	}
	for len(updates) > 0 {
		n := min(len(updates), 5000)
		if _, err := st.TriggersUpdateAfterFire(ctx, updates[:n]); err != nil {
			return err
		}
		updates = updates[n:]
	}
	return nil
}
