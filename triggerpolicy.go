package sundial

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TriggerPolicy is a change to a stored trigger's policies (UpdateTriggerPolicy): each field
// set replaces the trigger's, each nil one keeps it. The meanings are Trigger's.
type TriggerPolicy struct {
	Misfire       *schedule.MisfirePolicy
	CatchUpWindow *time.Duration
	CatchUp       *string
	Jitter        *time.Duration
	DST           *schedule.DSTPolicy
	Priority      *int
}

// UpdateTriggerPolicy changes the policies of trigger id (and of its zone rows, for a trigger
// of several zones) in one transaction, checked as AddTrigger checks them (FieldError naming
// the field). A new DST policy recomputes the trigger's next fire when it is still ahead; a
// fire already taken keeps the time it was taken for. It returns the trigger as stored.
func (s *Scheduler) UpdateTriggerPolicy(ctx context.Context, id int64, p TriggerPolicy) (*store.Trigger, error) {
	var out *store.Trigger
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		row, err := q.TriggerGet(ctx, id)
		if err != nil {
			return err
		}
		if row.ZoneOf != 0 {
			return schedule.Fieldf("id", "trigger %d is the zone %s of trigger %d: change that one", id, row.TimeZone, row.ZoneOf)
		}
		rows := []*store.Trigger{row}
		if len(row.Zones) > 1 {
			zr, err := q.TriggerList(ctx, store.TriggerFilter{ZoneOf: id, Limit: len(row.Zones)})
			if err != nil {
				return err
			}
			rows = append(rows, zr...)
		}
		if err := checkTriggerPolicy(row, p); err != nil {
			return err
		}
		now := s.clock.Now()
		for _, r := range rows {
			dstBefore := r.DSTPolicy
			applyTriggerPolicy(r, p)
			if r.DSTPolicy != dstBefore && r.NextFireAt > now.UnixMilli() &&
				(r.State == store.TriggerWaiting || r.State == store.TriggerPaused) {
				after := now
				if prev := time.UnixMilli(r.PrevFireAt); r.PrevFireAt != 0 && prev.After(after) {
					after = prev
				}
				next, err := s.engine.NextFireAfter(ctx, q, r, after)
				if err != nil {
					return err
				}
				r.NextFireAt = unixMilliOrZero(next)
				if next.IsZero() {
					r.State = store.TriggerComplete
				}
			}
			if err := q.TriggerUpdate(ctx, r); err != nil {
				return err
			}
		}
		out = row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sundial: update trigger %d: %w", id, err)
	}
	s.engine.Wake()
	return out, nil
}

// checkTriggerPolicy checks p against the stored trigger row, as triggerRow checks a new
// trigger's policies.
func checkTriggerPolicy(row *store.Trigger, p TriggerPolicy) error {
	if p.Jitter != nil {
		if *p.Jitter < 0 || *p.Jitter%time.Millisecond != 0 {
			return schedule.Fieldf("jitter_ms", "want a whole number of milliseconds, 0 or more, got %s", *p.Jitter)
		}
		if err := schedule.ValidateJitter(p.Jitter.Milliseconds()); err != nil {
			return err
		}
	}
	if w := p.CatchUpWindow; w != nil && (*w < 0 || *w%time.Millisecond != 0) {
		return schedule.Fieldf("catchup_window", "want a whole number of milliseconds, 0 or more, got %s", *w)
	}
	if c := p.CatchUp; c != nil && *c != "" && *c != store.CatchUpCoalesce {
		return schedule.Fieldf("catchup", "unknown catch-up mode %q (want coalesce, or none)", *c)
	}
	if pr := p.Priority; pr != nil && (*pr > math.MaxInt32 || *pr < math.MinInt32) {
		return schedule.Fieldf("priority", "want a 32-bit integer, got %d", *pr)
	}
	if p.DST != nil || p.Misfire != nil {
		loc, err := schedule.LoadZone(row.TimeZone)
		if err != nil {
			return &schedule.FieldError{Field: "time_zone", Err: err}
		}
		sched, err := schedule.DecodeSpec(schedule.Kind(row.Kind), row.Spec, loc)
		if err != nil {
			return &schedule.FieldError{Field: "schedule", Err: err}
		}
		if p.DST != nil {
			if sched, err = schedule.WithDST(sched, *p.DST); err != nil {
				return &schedule.FieldError{Field: "dst", Err: err}
			}
		}
		if p.Misfire != nil {
			tr := &schedule.Trigger{Schedule: sched, Start: time.UnixMilli(row.StartAt), Misfire: *p.Misfire}
			if row.EndAt != 0 {
				tr.End = time.UnixMilli(row.EndAt)
			}
			if err := tr.Validate(); err != nil {
				return schedule.Fieldf("misfire", "%v", err)
			}
		}
	}
	return nil
}

func applyTriggerPolicy(r *store.Trigger, p TriggerPolicy) {
	if p.Misfire != nil {
		r.MisfirePolicy = p.Misfire.String()
	}
	if p.CatchUpWindow != nil {
		r.CatchUpWindow = p.CatchUpWindow.Milliseconds()
	}
	if p.CatchUp != nil {
		r.CatchUp = *p.CatchUp
	}
	if p.Jitter != nil {
		r.JitterMs = p.Jitter.Milliseconds()
	}
	if p.DST != nil {
		r.DSTPolicy = dstColumn(*p.DST)
	}
	if p.Priority != nil {
		r.Priority = *p.Priority
	}
}
