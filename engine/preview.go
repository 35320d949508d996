package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// Preview is what a stored trigger will fire, as the engine would fire it.
type Preview struct {
	// Fires are the next fire times in the trigger's zone.
	Fires []time.Time
	// Misfired is set when the pending fire is already later than the misfire threshold, so
	// the times are those after the trigger's misfire policy is applied at now.
	Misfired bool
}

// PreviewTrigger computes a stored trigger's next n fire times at now the way acquisition
// will: its calendar skipped, its misfire policy applied when its pending fire is already too
// late, in its zone. It writes nothing; a paused trigger is previewed as if resumed now.
func (e *Engine) PreviewTrigger(ctx context.Context, row *store.Trigger, now time.Time, n int) (Preview, error) {
	tr, cal, err := e.buildTrigger(ctx, e.store, row)
	if err != nil {
		return Preview{}, fmt.Errorf("preview trigger %d: %w", row.ID, err)
	}
	loc, err := loadZoneCached(row.TimeZone)
	if err != nil {
		return Preview{}, fmt.Errorf("preview trigger %d: %w", row.ID, err)
	}
	tr.SkipExcluded(cal)
	var p Preview
	if tr.Misfired(now, e.cfg.MisfireThreshold) {
		tr.UpdateAfterMisfire(cal, now)
		p.Misfired = true
	}
	for len(p.Fires) < n && !tr.Next.IsZero() {
		p.Fires = append(p.Fires, tr.Next.In(loc))
		tr.Triggered(cal)
	}
	return p, nil
}
