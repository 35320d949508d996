package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testTriggerZoneRows: a trigger of several zones is its row (Zones listed) and a zone row
// per further zone (ZoneOf). Lists show the trigger alone unless asked; pausing, resuming and
// deleting it by id take its zone rows along; the same instant in two zones is two fires
// (two trigger ids), each execution keeping its zone.
func testTriggerZoneRows(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob(t, s, "g", "zones")
	main := &store.Trigger{JobID: j.ID, Group: "g", Name: "z", Kind: store.TriggerCron, Spec: `{"expr":"0 0 9 * * ?"}`,
		TimeZone: "Europe/Paris", NextFireAt: 1_000_000, Zones: []string{"Europe/Paris", "Asia/Tokyo"}}
	noErr(t, s.TriggerInsert(ctx, main))
	zr := &store.Trigger{JobID: j.ID, Group: "g", Name: "z@Asia/Tokyo", Kind: store.TriggerCron, Spec: main.Spec,
		TimeZone: "Asia/Tokyo", NextFireAt: 1_000_000, ZoneOf: main.ID}
	noErr(t, s.TriggerInsert(ctx, zr))
	got := get(s.TriggerGet(ctx, main.ID)).ok(t)
	if !reflect.DeepEqual(got.Zones, main.Zones) || got.ZoneOf != 0 {
		t.Fatalf("trigger zones %q zone_of %d, want %q and 0", got.Zones, got.ZoneOf, main.Zones)
	}
	if g := get(s.TriggerGet(ctx, zr.ID)).ok(t); g.ZoneOf != main.ID || g.Zones != nil {
		t.Fatalf("zone row: zone_of %d zones %q, want %d and none", g.ZoneOf, g.Zones, main.ID)
	}
	ids := func(f store.TriggerFilter) []int64 {
		var out []int64
		for _, tr := range get(s.TriggerList(ctx, f)).ok(t) {
			out = append(out, tr.ID)
		}
		return out
	}
	if g := ids(store.TriggerFilter{JobID: j.ID}); !reflect.DeepEqual(g, []int64{main.ID}) {
		t.Fatalf("job's triggers %v, want the trigger alone %v", g, main.ID)
	}
	if g := ids(store.TriggerFilter{JobID: j.ID, WithZoneRows: true}); !reflect.DeepEqual(g, []int64{main.ID, zr.ID}) {
		t.Fatalf("job's rows %v, want %v", g, []int64{main.ID, zr.ID})
	}
	if g := ids(store.TriggerFilter{ZoneOf: main.ID}); !reflect.DeepEqual(g, []int64{zr.ID}) {
		t.Fatalf("zone rows %v, want %v", g, []int64{zr.ID})
	}

	// The same instant in two zones: two fires, two keys, each with its zone.
	es := []*store.Execution{
		{JobID: j.ID, TriggerID: main.ID, ScheduledAt: 1_000_000, Cause: store.CauseSchedule, State: store.ExecPending, FireZone: "Europe/Paris"},
		{JobID: j.ID, TriggerID: zr.ID, ScheduledAt: 1_000_000, Cause: store.CauseSchedule, State: store.ExecPending, FireZone: "Asia/Tokyo"},
	}
	dups := get(s.ExecutionsInsert(ctx, es)).ok(t)
	equal(t, "duplicates", len(dups), 0)
	for _, x := range es {
		equal(t, "fire zone", get(s.ExecutionGet(ctx, x.ID)).ok(t).FireZone, x.FireZone)
	}
	again := []*store.Execution{{JobID: j.ID, TriggerID: zr.ID, ScheduledAt: 1_000_000, Cause: store.CauseRecovery, State: store.ExecPending, FireZone: "Asia/Tokyo"}}
	equal(t, "a zone's fire again is a duplicate", len(get(s.ExecutionsInsert(ctx, again)).ok(t)), 1)

	n := get(s.TriggersPause(ctx, store.TriggerSelector{TriggerID: main.ID})).ok(t)
	equal(t, "paused rows", n, int64(2))
	equal(t, "zone row paused", get(s.TriggerGet(ctx, zr.ID)).ok(t).State, store.TriggerPaused)
	n = get(s.TriggersResume(ctx, store.TriggerSelector{TriggerID: main.ID})).ok(t)
	equal(t, "resumed rows", n, int64(2))
	equal(t, "zone row resumed", get(s.TriggerGet(ctx, zr.ID)).ok(t).State, store.TriggerWaiting)

	noErr(t, s.TriggerDelete(ctx, main.ID))
	_, err := s.TriggerGet(ctx, zr.ID)
	wantErr(t, err, store.ErrNotFound)
}
