package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// A trigger of several zones (store.Trigger.Zones) is one row per zone: the row the API shows
// holds the first zone, and each further zone is a zone row of its own. Acquisition, the fire
// key and recovery see only rows, so a zone row fires as any trigger does, in one statement
// with the others, and the same instant in two zones is two fires of two rows.

// ZoneRow is the zone row that makes row fire in zone too: row in that zone, named
// "NAME@ZONE", with its own first fire computed there. It is not stored.
func (e *Engine) ZoneRow(ctx context.Context, q store.Querier, row *store.Trigger, zone string) (*store.Trigger, error) {
	zr := *row
	zr.ID, zr.Version, zr.Zones, zr.ZoneOf = 0, 0, nil, row.ID
	zr.Name, zr.TimeZone = row.Name+"@"+zone, zone
	zr.PrevFireAt, zr.TimesFired = 0, 0
	tr, cal, err := e.buildTrigger(ctx, q, &zr)
	if err != nil {
		return nil, fmt.Errorf("trigger %s in zone %s: %w", row.Name, zone, err)
	}
	first, err := tr.ComputeFirst(cal)
	if err != nil {
		return nil, fmt.Errorf("trigger %s in zone %s: %w", row.Name, zone, err)
	}
	zr.NextFireAt = millis(first)
	if first.IsZero() {
		zr.State = store.TriggerComplete
	}
	return &zr, nil
}

// MergeZones merges the previews of a trigger's rows, one per zone (zones[i] for ps[i]), into
// one preview of its first n fires in time order, each with its zone (Preview.Zones). Fires of
// two zones at the same instant stay two fires, in the order the trigger lists its zones.
func MergeZones(ps []Preview, zones []string, n int) Preview {
	type fire struct {
		at     time.Time
		zone   int
		due    time.Time
		dst    string
		hasDue bool
	}
	var all []fire
	var out Preview
	for i, p := range ps {
		out.Misfired = out.Misfired || p.Misfired
		for j, f := range p.Fires {
			x := fire{at: f, zone: i}
			if p.Due != nil {
				x.due, x.hasDue = p.Due[j], true
			}
			if p.DST != nil {
				x.dst = p.DST[j]
			}
			all = append(all, x)
		}
	}
	slices.SortStableFunc(all, func(a, b fire) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.zone, b.zone)
	})
	if len(all) > n {
		all = all[:n]
	}
	for i, f := range all {
		out.Fires = append(out.Fires, f.at)
		out.Zones = append(out.Zones, zones[f.zone])
		if f.hasDue {
			if out.Due == nil {
				out.Due = make([]time.Time, len(all))
			}
			out.Due[i] = f.due
		}
		if f.dst != "" {
			if out.DST == nil {
				out.DST = make([]string, len(all))
			}
			out.DST[i] = f.dst
		}
	}
	return out
}

// NextFireAfter is the first time a stored trigger fires strictly after the instant, by its
// schedule (with its DST policy) and calendar; zero when it never does. A trigger whose DST
// policy changed has its next fire recomputed with it.
func (e *Engine) NextFireAfter(ctx context.Context, q store.Querier, row *store.Trigger, after time.Time) (time.Time, error) {
	tr, cal, err := e.buildTrigger(ctx, q, row)
	if err != nil {
		return time.Time{}, fmt.Errorf("trigger %d: %w", row.ID, err)
	}
	next, ok := tr.FireTimeAfter(after)
	if !ok {
		return time.Time{}, nil
	}
	tr.Next = next
	tr.SkipExcluded(cal)
	return tr.Next, nil
}
