package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// The fire-rate quota of an app: at most AppFiresPerSecond of its fires start in any one
// second on this node. It is applied here, once, when fires are acquired: a fire over the
// quota is held back (its start is delayed to the first millisecond the quota allows),
// never dropped or skipped, and keeps its scheduled time, so its misfire policy does not
// apply to the delay and its idempotency key does not change. Delayed fires wait in the
// node's fire queue like any acquired fire, so a backlog counts against MaxHeld. The quota
// spaces the fires' start slots (whole milliseconds); a fire that reaches its slot late (a
// manual run acquired after it was due waits for its claim's round trip) starts that much
// after it, so measured start times may sit a few milliseconds closer than a second.
//
// In-process jobs (no app) share the quota of the app "". The quota is per node: a cluster
// of N nodes may start up to N times the rate for one app, as each node limits the fires it
// acquired.

// rateWindow is the span the quota counts fires in.
const rateWindow = time.Second

// fireRate holds, per app, the start times the quota gave its latest fires.
type fireRate struct {
	per int // fires per rateWindow; <= 0: no quota
	mu  sync.Mutex
	// apps[app] is a ring of the last per start times (ms), oldest at next.
	apps map[string]*startRing
}

type startRing struct {
	at   []int64
	next int
	last int64 // the latest start given: starts never go back in time
}

func newFireRate(per int) *fireRate {
	return &fireRate{per: per, apps: map[string]*startRing{}}
}

// slot returns the earliest millisecond at or after due at which a fire of app may start
// without a window holding more than per starts of the app, and takes it. Starts are given
// in order, so the per-th start before this one is the one that bounds it.
func (r *fireRate) slot(app string, due int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ring := r.apps[app]
	if ring == nil {
		ring = &startRing{at: make([]int64, 0, r.per)}
		r.apps[app] = ring
	}
	start := max(due, ring.last)
	if len(ring.at) == r.per {
		start = max(start, ring.at[ring.next]+rateWindow.Milliseconds())
		ring.at[ring.next] = start
		ring.next = (ring.next + 1) % r.per
	} else {
		ring.at = append(ring.at, start)
	}
	ring.last = start
	return start
}

// applyFireRate gives each acquired fire its start under its app's quota, earliest due first
// (by priority at the same millisecond). Fires that will not run (a misfire skip) take no
// part of the quota.
func (e *Engine) applyFireRate(ctx context.Context, fires []*pendingFire) {
	if e.rate == nil || len(fires) == 0 {
		return
	}
	ids := make([]int64, len(fires))
	for i, f := range fires {
		ids[i] = f.exec.JobID
	}
	jobs, err := e.jobs.getMany(ctx, ids)
	if err != nil {
		// Without the jobs' apps the quota cannot be told apart per app: the fires go out
		// on time rather than late or never.
		e.log.Warn("read the jobs of acquired fires for the fire-rate quota; not applied to this round", "err", err)
		return
	}
	ordered := slices.Clone(fires)
	slices.SortStableFunc(ordered, func(a, b *pendingFire) int {
		if c := cmp.Compare(a.exec.ScheduledAt, b.exec.ScheduledAt); c != 0 {
			return c
		}
		return cmp.Compare(b.priority, a.priority)
	})
	// A fire already due (a manual run, a retry) starts now at the earliest: its slot is
	// counted from now, not from its past due time, so the late start does not crowd the
	// next fires' window.
	now := e.clock.Now().UnixMilli()
	for _, f := range ordered {
		if f.missed != "" {
			continue
		}
		app := ""
		if j := jobs[f.exec.JobID]; j != nil {
			app = j.App
		}
		if start := e.rate.slot(app, max(f.exec.ScheduledAt, now)); start > max(f.exec.ScheduledAt, now) {
			f.notBefore = start
			e.stats.QuotaDelayed.Add(1)
		}
	}
}
