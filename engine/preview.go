package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// Preview is what a stored trigger will fire, as the engine would fire it.
type Preview struct {
	// Fires are the next fire times in the trigger's zone.
	Fires []time.Time
	// Misfired is set when the pending fire is already later than the misfire threshold, so
	// the times are those after the trigger's misfire policy is applied at now.
	Misfired bool
	// Due, for a trigger with jitter, is when each fire starts (Fires[i] plus its offset);
	// nil without jitter.
	Due []time.Time
	// DST marks each fire next to a DST change (schedule.DSTMark); nil when none is.
	DST []string
	// Zones, for a trigger of several zones (MergeZones), is the zone of each fire; nil for a
	// trigger of one.
	Zones []string
}

// annotate adds the fires' starts under the trigger's jitter and their DST marks.
func (p *Preview) annotate(row *store.Trigger, loc *time.Location, sched schedule.Schedule) {
	zoned := schedule.LocationOf(sched) != nil
	for i, f := range p.Fires {
		if row.JitterMs > 0 {
			p.Due = append(p.Due, f.Add(jitter(row, f)))
		}
		if m := schedule.DSTMark(f, loc); zoned && m != "" {
			if p.DST == nil {
				p.DST = make([]string, len(p.Fires))
			}
			p.DST[i] = m
		}
	}
}

// PreviewTrigger computes a stored trigger's next n fire times at now the way acquisition
// will: its calendar skipped, its misfire policy applied when its pending fire is already too
// late, in its zone. It writes nothing; a paused trigger is previewed as if resumed now.
func (e *Engine) PreviewTrigger(ctx context.Context, row *store.Trigger, now time.Time, n int) (Preview, error) {
	tr, cal, loc, err := e.previewed(ctx, row)
	if err != nil {
		return Preview{}, err
	}
	tr.SkipExcluded(cal)
	var p Preview
	window := e.lateAllowance(row, tr.Next)
	if row.CatchUp == store.CatchUpCoalesce {
		if _, ok := tr.Coalesce(cal, now, window); ok {
			p.Misfired = true
			p.Fires = append(p.Fires, now.In(loc))
		}
	} else {
		p.Misfired = applyMisfire(tr, cal, now, window)
	}
	for len(p.Fires) < n && !tr.Next.IsZero() {
		p.Fires = append(p.Fires, tr.Next.In(loc))
		tr.Triggered(cal)
	}
	p.annotate(row, loc, tr.Schedule)
	return p, nil
}

// PreviewTriggerAfter lists a stored trigger's n fire times strictly after the instant, as
// its schedule and calendar give them from its start to its end: each the trigger's first
// included fire time after the one before (Quartz's getFireTimeAfter, stepped past what the
// calendar excludes), so an imported trigger can be held against Quartz's own listing of it.
// Its state plays no part (no misfire, paused or not); its times fired do, as in Quartz,
// where they bound a repeat count.
func (e *Engine) PreviewTriggerAfter(ctx context.Context, row *store.Trigger, after time.Time, n int) (Preview, error) {
	tr, cal, loc, err := e.previewed(ctx, row)
	if err != nil {
		return Preview{}, err
	}
	var p Preview
	for t := after; len(p.Fires) < n; t = tr.Next {
		next, ok := tr.FireTimeAfter(t)
		if !ok {
			break
		}
		tr.Next = next
		tr.SkipExcluded(cal)
		if tr.Next.IsZero() {
			break
		}
		p.Fires = append(p.Fires, tr.Next.In(loc))
	}
	p.annotate(row, loc, tr.Schedule)
	return p, nil
}

// previewed rebuilds a stored trigger for a preview, with its calendar and its zone.
func (e *Engine) previewed(ctx context.Context, row *store.Trigger) (*schedule.Trigger, schedule.Calendar, *time.Location, error) {
	tr, cal, err := e.buildTrigger(ctx, e.store, row)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("preview trigger %d: %w", row.ID, err)
	}
	loc, err := loadZoneCached(row.TimeZone)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("preview trigger %d: %w", row.ID, err)
	}
	return tr, cal, loc, nil
}

// applyMisfire applies the trigger's misfire policy when its pending fire is later than
// threshold at now, and reports whether it did: the one place acquisition, previews and
// resumes decide a misfire.
func applyMisfire(tr *schedule.Trigger, cal schedule.Calendar, now time.Time, threshold time.Duration) bool {
	if !tr.Misfired(now, threshold) {
		return false
	}
	tr.UpdateAfterMisfire(cal, now)
	return true
}

// CatchUpOnResume prepares a paused trigger for its resume at now, as Quartz's resumeTrigger
// does: when its next fire passed while it was paused, its misfire policy applies once, so a
// resume never replays every missed slot (fire_now, and smart for most kinds, leaves one fire
// due now; do_nothing none; ignore keeps every missed fire, as that policy asks). Unlike
// acquisition it applies whatever the lateness: a fire missed because of the pause is missed
// even when the pause was shorter than the misfire threshold. The trigger is written still
// paused; it reports whether it changed.
func (e *Engine) CatchUpOnResume(ctx context.Context, row *store.Trigger, now time.Time) (bool, error) {
	tr, cal, err := e.buildTrigger(ctx, e.store, row)
	if err != nil {
		return false, fmt.Errorf("resume trigger %d: %w", row.ID, err)
	}
	tr.SkipExcluded(cal)
	// A coalescing trigger keeps its missed fires: acquisition makes them one run covering
	// the pause (or, within its catch-up window, runs each).
	if row.CatchUp == store.CatchUpCoalesce || !applyMisfire(tr, cal, now, 0) {
		return false, nil
	}
	row.Spec, row.StartAt = schedule.EncodeSpec(tr.Schedule), millis(tr.Start)
	row.NextFireAt, row.TimesFired = millis(tr.Next), int64(tr.TimesTriggered)
	if tr.Next.IsZero() {
		row.State = store.TriggerComplete
	}
	if err := e.store.TriggerUpdate(ctx, row); err != nil {
		return false, fmt.Errorf("resume trigger %d: %w", row.ID, err)
	}
	return true, nil
}
