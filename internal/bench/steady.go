package bench

import (
	"context"
	"errors"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
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
	if c.remote != nil {
		c.remote.job = job.ID
	}
	res.InsertRate = rate
	load, err := c.releaseSpread(ctx, ids, cfg.Interval, firstFireAt(len(ids), rate))
	if err != nil {
		return res, err
	}
	from, to := load.t0.Add(cfg.Warmup), load.t0.Add(cfg.Warmup+cfg.Duration)
	if err := c.spawn(ctx, to.Add(2*time.Second)); err != nil {
		return res, err
	}
	if err := c.start(ctx); err != nil {
		c.stop()
		return res, err
	}
	c.lateStart(load.t0)
	var statsFrom, statsTo sqlstore.Stats
	var cpuFrom, cpuTo usage
	var firesFrom, firesTo int
	if err := window(ctx, from, to, func(at time.Time) {
		if at.Equal(from) {
			statsFrom, cpuFrom, firesFrom = c.storeStats(), sampleUsage(), c.rec.count()
		} else {
			statsTo, cpuTo, firesTo = c.storeStats(), sampleUsage(), c.rec.count()
		}
	}); err != nil {
		c.stop()
		return res, err
	}
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
	load.tally(&res, c.rec.fires, from, to, cfg.Duration)
	costs(&res, firesTo-firesFrom, statsFrom, statsTo, cpuTo.cpu-cpuFrom.cpu)
	return res, err
}

// spread is the steady load's triggers: trigger i of n is first due at t0 + i·interval/n,
// then every interval.
type spread struct {
	ids      []int64
	t0       time.Time
	interval time.Duration
}

func (s spread) first(i int) time.Time {
	return s.t0.Add(time.Duration(i) * s.interval / time.Duration(len(s.ids)))
}

// releaseSpread makes the inserted triggers ids due, spread over the interval from t0.
func (c *cluster) releaseSpread(ctx context.Context, ids []int64, interval time.Duration, t0 time.Time) (spread, error) {
	s := spread{ids: ids, t0: t0, interval: interval}
	return s, c.release(ctx, ids, s.first)
}

// window waits out the measuring window [from, to), sampling at its start and its end,
// then a grace for the fires due at its end. It returns ctx's error if ctx ends first.
func window(ctx context.Context, from, to time.Time, sample func(at time.Time)) error {
	for _, at := range []time.Time{from, to} {
		if !sleepUntil(ctx, at) {
			return ctx.Err()
		}
		sample(at)
	}
	sleepUntil(ctx, to.Add(2*time.Second))
	return nil
}

// tally counts the load's fires of the window [from, to) of length d into res: those
// started, their lateness, duplicates, and the window's fires that did not run. Such a fire
// is missing when a later fire of its trigger ran (a hole: the fire was lost), and unfired
// when none did (the node was behind when the run stopped: the fire was still due, and a
// trigger fires in order). It returns the fires started.
func (s spread) tally(res *Result, fires []fire, from, to time.Time, d time.Duration) int {
	started := 0
	for _, f := range fires {
		if at := time.Unix(0, f.startedAt); !at.Before(from) && at.Before(to) {
			started++
		}
	}
	res.Fires, res.Achieved = started, float64(started)/d.Seconds()
	latenessOf(res, fires, from, to)
	var seen map[[2]int64]bool
	res.Duplicates, seen = duplicatesOf(fires)
	last := map[int64]int64{}
	for _, f := range fires {
		last[f.trigger] = max(last[f.trigger], f.scheduledAt)
	}
	for i, id := range s.ids {
		for at := s.first(i); at.Before(to); at = at.Add(s.interval) {
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
	return started
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
