package bench

import (
	"context"
	"errors"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// SteadyConfig is the steady scenario: Triggers simple triggers, each firing every Interval,
// spread evenly over the interval, measured for Duration after Warmup.
type SteadyConfig struct {
	Triggers int
	Interval time.Duration
	Warmup   time.Duration
	Duration time.Duration
}

// Steady runs the steady scenario.
func Steady(ctx context.Context, opts Options, cfg SteadyConfig) (Result, error) {
	c, err := openCluster(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	return c.steady(ctx, "steady", cfg)
}

// steady runs the steady load on c's nodes, whichever kind they are (bare engines or
// servers with executors), and measures it.
func (c *cluster) steady(ctx context.Context, scenario string, cfg SteadyConfig) (Result, error) {
	res := Result{Scenario: scenario, Triggers: cfg.Triggers, Nodes: len(c.stores) + c.opts.Processes,
		Demanded: float64(cfg.Triggers) * float64(time.Second) / float64(cfg.Interval)}

	job, ids, rate, err := c.insertTriggers(ctx, cfg.Triggers, cfg.Interval, schedule.RepeatForever)
	if err != nil {
		return res, err
	}
	defer c.stores[0].JobDelete(context.Background(), job.ID)
	res.InsertRate = rate
	t0 := firstFireAt(len(ids), rate)
	first := func(i int) time.Time { return t0.Add(time.Duration(i) * cfg.Interval / time.Duration(len(ids))) }
	if err := c.release(ctx, ids, first); err != nil {
		return res, err
	}
	from, to := t0.Add(cfg.Warmup), t0.Add(cfg.Warmup+cfg.Duration)
	if err := c.spawn(ctx, to.Add(2*time.Second)); err != nil {
		return res, err
	}
	if err := c.start(ctx); err != nil {
		c.stop()
		return res, err
	}
	c.lateStart(t0)
	if !sleepUntil(ctx, from) {
		c.stop()
		return res, ctx.Err()
	}
	statsFrom, cpuFrom, firesFrom := c.storeStats(), sampleUsage(), c.rec.count()
	if !sleepUntil(ctx, to) {
		c.stop()
		return res, ctx.Err()
	}
	statsTo, cpuTo, firesTo := c.storeStats(), sampleUsage(), c.rec.count()
	sleepUntil(ctx, to.Add(2*time.Second)) // grace for fires due at the window's end
	misfires, err := c.stop()
	res.Misfires = misfires
	if reapErr := c.reap(); reapErr != nil {
		return res, errors.Join(err, reapErr)
	}
	if c.remote != nil {
		// Remote handlers know their execution, not their trigger: the store maps one to the
		// other, and tells which runs of the window did not complete.
		var resolveErr error
		if res.Incomplete, resolveErr = c.remote.resolve(ctx, c.stores[0], job.ID, c.rec, from, to); resolveErr != nil {
			return res, errors.Join(err, resolveErr)
		}
	}

	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	fires := c.rec.fires
	started := 0
	for _, f := range fires {
		if s := time.Unix(0, f.startedAt); !s.Before(from) && s.Before(to) {
			started++
		}
	}
	res.Fires, res.Achieved = started, float64(started)/cfg.Duration.Seconds()
	latenessOf(&res, fires, from, to)
	var seen map[[2]int64]bool
	res.Duplicates, seen = duplicatesOf(fires)
	// A fire of the window that did not run is missing when a later fire of its trigger ran
	// (a hole: the fire was lost), and unfired when none did (the node was behind when the
	// run stopped: the fire was still due, and a trigger fires in order).
	last := map[int64]int64{}
	for _, f := range fires {
		last[f.trigger] = max(last[f.trigger], f.scheduledAt)
	}
	for i, id := range ids {
		for at := first(i); at.Before(to); at = at.Add(cfg.Interval) {
			if at.Before(from) || seen[[2]int64{id, at.UnixMilli()}] {
				continue
			}
			if at.UnixMilli() < last[id] {
				res.Missing++
			} else {
				res.Unfired++
			}
		}
	}
	costs(&res, firesTo-firesFrom, statsFrom, statsTo, cpuTo.cpu-cpuFrom.cpu)
	return res, err
}

// sleepUntil waits until t or until ctx ends; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
