package engine

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fire-rate quota of an app: at most AppFiresPerSecond of its fires start in any one
// second, across the cluster. It is applied here, once, when fires are acquired: a fire over
// the quota is held back (its start is delayed to the first millisecond the quota allows),
// never dropped or skipped, and keeps its scheduled time, so its misfire policy does not
// apply to the delay and its idempotency key does not change. Delayed fires wait in the
// node's fire queue like any acquired fire, so a backlog counts against MaxHeld. The quota
// spaces the fires' start slots (whole milliseconds); a fire that reaches its slot late (a
// manual run acquired after it was due waits for its claim's round trip) starts that much
// after it, so measured start times may sit a few milliseconds closer than a second.
//
// The starts an app was given in the last second are kept in the database (one row per app,
// store.FireQuotaTake), and every node takes its fires' slots under that row's lock, so the
// quota holds for the cluster, not for each node: one round trip per acquisition round that
// acquired fires, and none without a quota. In-process jobs share the quota of the app "".
// Nodes compare their clocks' milliseconds here, as they do for every fire time.

// rateWindow is the span the quota counts fires in.
const rateWindow = time.Second

// quotaStarts is how many starts an app was given at one millisecond.
type quotaStarts struct {
	at int64
	n  int
}

// quotaState is an app's starts within the window before its latest, oldest first: all
// that bounds the next start, since starts are given in order. It holds at most one entry
// per millisecond of the window, however high the quota.
type quotaState []quotaStarts

// parseQuotaState reads a state as String writes it. Text it cannot read is taken as no
// starts: a garbled row costs one window's accuracy, never a node that cannot fire.
func parseQuotaState(s string) quotaState {
	var q quotaState
	for part := range strings.SplitSeq(s, ",") {
		at, n, ok := strings.Cut(part, ":")
		a, err1 := strconv.ParseInt(at, 10, 64)
		c, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || c < 1 || (len(q) > 0 && a <= q[len(q)-1].at) {
			return nil
		}
		q = append(q, quotaStarts{a, c})
	}
	return q
}

// String writes the state as "ms:count,…".
func (q quotaState) String() string {
	var b strings.Builder
	for i, s := range q {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s.at, 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(s.n))
	}
	return b.String()
}

// slot returns the earliest millisecond at or after due at which one more start leaves no
// window of rateWindow holding more than per starts, and takes it. Starts never go back in
// time: a fire due before the latest start starts with it or after.
func (q *quotaState) slot(per int, due int64) int64 {
	window := rateWindow.Milliseconds()
	start := due
	if n := len(*q); n > 0 {
		start = max(start, (*q)[n-1].at)
	}
	for {
		drop := 0
		for drop < len(*q) && (*q)[drop].at <= start-window {
			drop++
		}
		*q = (*q)[drop:]
		count := 0
		for _, s := range *q {
			count += s.n
		}
		if count < per {
			break
		}
		start = (*q)[0].at + window // when the oldest starts leave the window
	}
	if n := len(*q); n > 0 && (*q)[n-1].at == start {
		(*q)[n-1].n++
	} else {
		*q = append(*q, quotaStarts{start, 1})
	}
	return start
}

// applyFireRate gives each acquired fire its start under its app's quota, earliest due first
// (by priority at the same millisecond). Fires that will not run (a misfire skip) take no
// part of the quota.
func (e *Engine) applyFireRate(ctx context.Context, fires []*pendingFire) {
	per := e.cfg.AppFiresPerSecond
	if per <= 0 || len(fires) == 0 {
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
		if c := cmp.Compare(a.due(), b.due()); c != 0 {
			return c
		}
		return cmp.Compare(b.priority, a.priority)
	})
	byApp := map[string][]*pendingFire{}
	for _, f := range ordered {
		if f.missed != "" {
			continue
		}
		app := ""
		if j := jobs[f.exec.JobID]; j != nil {
			app = j.App
		}
		byApp[app] = append(byApp[app], f)
	}
	if len(byApp) == 0 {
		return
	}
	apps := make([]string, 0, len(byApp))
	for app := range byApp {
		apps = append(apps, app)
	}
	// A fire already due (a manual run, a retry) starts now at the earliest: its slot is
	// counted from now, not from its past due time, so the late start does not crowd the
	// next fires' window.
	now := e.clock.Now().UnixMilli()
	var slots map[*pendingFire]int64
	err = e.store.FireQuotaTake(ctx, apps, func(states map[string]string) map[string]string {
		slots = make(map[*pendingFire]int64, len(ordered)) // again if the take is run again
		out := make(map[string]string, len(byApp))
		for app, fs := range byApp {
			q := parseQuotaState(states[app])
			for _, f := range fs {
				slots[f] = q.slot(per, max(f.due(), now)) // a jittered fire's slot counts from its start
			}
			out[app] = q.String()
		}
		return out
	})
	if err != nil {
		// The fires go out on time rather than late or never; the quota misses this round.
		e.log.Warn("take the fire-rate quota's slots; not applied to this round", "err", err, "fires", len(ordered))
		return
	}
	for f, start := range slots {
		if start > max(f.due(), now) {
			f.notBefore = start
			e.stats.QuotaDelayed.Add(1)
		}
	}
}
