package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
)

// ScheduleConfig is the schedule scenario: how fast Jobs jobs, each with one cron trigger,
// are created through the embedding API — one transaction per job, and all in one.
type ScheduleConfig struct {
	Jobs int
}

// Schedule runs the schedule scenario. InsertRate is jobs/s one at a time, BatchRate jobs/s
// in one transaction.
func Schedule(ctx context.Context, opts Options, cfg ScheduleConfig) (Result, error) {
	c, err := openCluster(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	res := Result{Scenario: "schedule", Triggers: cfg.Jobs, Nodes: 1}
	s, err := sundial.New(sundial.Config{Store: c.stores[0], Logger: c.opts.Logger})
	if err != nil {
		return res, err
	}
	cron, err := schedule.ParseCron("0 0/5 * * * ?", time.UTC)
	if err != nil {
		return res, err
	}
	stamp := time.Now().UnixNano()
	job := func(kind string, i int) (sundial.Job, sundial.Trigger) {
		return sundial.Job{Group: "bench-schedule", Name: fmt.Sprintf("%s-%d-%d", kind, stamp, i), Handler: "noop"},
			sundial.Trigger{Group: "bench-schedule", Schedule: cron}
	}
	var ids []int64
	defer func() {
		for _, id := range ids {
			_ = s.DeleteJob(context.Background(), id, sundial.DeleteJobOpts{Force: true})
		}
	}()

	statsFrom := c.storeStats()
	start := time.Now()
	for i := range cfg.Jobs {
		j, t := job("single", i)
		id, err := s.ScheduleJob(ctx, j, t)
		if err != nil {
			return res, err
		}
		ids = append(ids, id)
	}
	res.InsertRate = float64(cfg.Jobs) / time.Since(start).Seconds()

	start = time.Now()
	tx, err := c.stores[0].Begin(ctx)
	if err != nil {
		return res, err
	}
	defer tx.Rollback()
	for i := range cfg.Jobs {
		j, t := job("batch", i)
		id, err := s.ScheduleJobTx(ctx, tx, j, t)
		if err != nil {
			return res, err
		}
		ids = append(ids, id)
	}
	if err := tx.Commit(); err != nil {
		return res, err
	}
	res.BatchRate = float64(cfg.Jobs) / time.Since(start).Seconds()
	statsTo := c.storeStats()
	res.StatementsPerFire = float64(statsTo.Statements-statsFrom.Statements) / float64(2*cfg.Jobs)
	res.TransactionsPerFire = float64(statsTo.Transactions-statsFrom.Transactions) / float64(2*cfg.Jobs)
	return res, nil
}
