package bench

import (
	"context"
	"time"
)

// BacklogConfig is the backlog scenario: Fires one-shot triggers all due within one second.
type BacklogConfig struct {
	Fires   int
	MaxWait time.Duration // give up this long after the first is due
}

// Backlog runs the backlog scenario: how long a node (or nodes) takes to drain a burst.
func Backlog(ctx context.Context, opts Options, cfg BacklogConfig) (Result, error) {
	c, err := openCluster(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	res := Result{Scenario: "backlog", Triggers: cfg.Fires, Nodes: len(c.stores)}
	job, ids, rate, err := c.insertTriggers(ctx, cfg.Fires, 0, 0)
	if err != nil {
		return res, err
	}
	defer c.stores[0].JobDelete(context.Background(), job.ID)
	res.InsertRate = rate
	t0 := time.Now().Add(time.Second).Truncate(time.Second)
	first := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second / time.Duration(len(ids))) }
	if err := c.release(ctx, ids, first); err != nil {
		return res, err
	}
	statsFrom, cpuFrom := c.storeStats(), sampleUsage()
	if err := c.start(ctx); err != nil {
		return res, err
	}
	deadline := t0.Add(cfg.MaxWait)
	for c.rec.count() < cfg.Fires && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepUntil(ctx, time.Now().Add(10*time.Millisecond))
	}
	misfires, err := c.stop() // results written: their statements count
	statsTo, cpuTo := c.storeStats(), sampleUsage()
	res.Misfires = misfires

	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	fires := c.rec.fires
	var last int64
	for _, f := range fires {
		last = max(last, f.startedAt)
	}
	res.Fires = len(fires)
	if last > 0 {
		res.Drain = time.Unix(0, last).Sub(t0)
		res.Achieved = float64(len(fires)) / res.Drain.Seconds()
	}
	latenessOf(&res, fires, t0, t0.Add(time.Second))
	var seen map[[2]int64]bool
	res.Duplicates, seen = duplicatesOf(fires)
	for i, id := range ids {
		if !seen[[2]int64{id, first(i).UnixMilli()}] {
			res.Missing++
		}
	}
	costs(&res, len(fires), statsFrom, statsTo, cpuTo.cpu-cpuFrom.cpu)
	return res, err
}
