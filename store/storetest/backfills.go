package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testCatchUpAndBackfills checks what the catch-up policies store: a trigger's catch-up
// window and mode, a run's data interval and backfill through its whole life (live, ended by
// a result, ended by a cancel), and backfill records with their lock, list and update.
func testCatchUpAndBackfills(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := &store.Job{Group: "g", Name: "nightly", TargetKind: store.TargetLocal, Handler: "noop", Enabled: true}
	noErr(t, s.JobInsert(ctx, j))
	tr := &store.Trigger{JobID: j.ID, Group: "g", Name: "t", Kind: "cron", Spec: "{}", TimeZone: "UTC", MisfirePolicy: "smart",
		NextFireAt: 7_200_000, CatchUpWindow: 14_400_000, CatchUp: store.CatchUpCoalesce}
	noErr(t, s.TriggerInsert(ctx, tr))
	got, err := s.TriggerGet(ctx, tr.ID)
	noErr(t, err)
	if got.CatchUpWindow != 14_400_000 || got.CatchUp != store.CatchUpCoalesce {
		t.Fatalf("trigger catch-up %d %q, want 14400000 coalesce", got.CatchUpWindow, got.CatchUp)
	}
	got.CatchUpWindow, got.CatchUp = 0, ""
	noErr(t, s.TriggerUpdate(ctx, got))
	if got, _ = s.TriggerGet(ctx, tr.ID); got.CatchUpWindow != 0 || got.CatchUp != "" {
		t.Fatalf("after update: catch-up %d %q, want none", got.CatchUpWindow, got.CatchUp)
	}

	b := &store.Backfill{JobID: j.ID, TriggerID: tr.ID, FromAt: 1000, ToAt: 9000, MaxConcurrent: 2, Chunk: 3, Total: 7, CreatedBy: "ops"}
	noErr(t, s.BackfillInsert(ctx, b))
	other := &store.Backfill{JobID: j.ID + 1000, TriggerID: tr.ID, FromAt: 1, ToAt: 2, MaxConcurrent: 1, Chunk: 1, Total: 1}
	noErr(t, s.BackfillInsert(ctx, other))
	if b.ID == 0 || b.State != store.BackfillRunning || b.CreatedAt == 0 {
		t.Fatalf("inserted backfill %+v", b)
	}
	gb, err := s.BackfillGet(ctx, b.ID)
	noErr(t, err)
	if *gb != *b {
		t.Fatalf("get backfill %+v, want %+v", gb, b)
	}
	if _, err := s.BackfillGet(ctx, b.ID+other.ID+100); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get a missing backfill: %v", err)
	}
	list, err := s.BackfillList(ctx, j.ID)
	noErr(t, err)
	if len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("list of the job: %+v", list)
	}
	if all, _ := s.BackfillList(ctx, 0); len(all) != 2 || all[0].ID != other.ID {
		t.Fatalf("list of all: %d, want 2 newest first", len(all))
	}

	// Runs of the backfill: one ends with a result, one pending is canceled with it.
	run := func(end int64, state store.ExecutionState) *store.Execution {
		return &store.Execution{JobID: j.ID, ScheduledAt: 50, Cause: store.CauseBackfill, State: state, Node: "n",
			BackfillID: b.ID, IntervalStart: end - 3600_000, IntervalEnd: end}
	}
	running, pending := run(7_200_000, store.ExecRunning), run(10_800_000, store.ExecPending)
	_, err = s.ExecutionsInsert(ctx, []*store.Execution{running, pending})
	noErr(t, err)
	n, err := s.ExecutionsLiveOfBackfill(ctx, b.ID)
	noErr(t, err)
	if n != 2 {
		t.Fatalf("%d live runs of the backfill, want 2", n)
	}
	for _, x := range []*store.Execution{running, pending} {
		g, err := s.ExecutionGet(ctx, x.ID)
		noErr(t, err)
		if g.BackfillID != b.ID || g.IntervalStart != x.IntervalStart || g.IntervalEnd != x.IntervalEnd || g.Cause != store.CauseBackfill {
			t.Fatalf("live run %d: %+v", x.ID, g)
		}
	}
	_, err = s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: running.ID, State: store.ExecSucceeded, FinishedAt: 60}})
	noErr(t, err)

	tx, err := s.Begin(ctx)
	noErr(t, err)
	locked, err := tx.BackfillLock(ctx, b.ID)
	noErr(t, err)
	locked.State, locked.CursorAt, locked.Created = store.BackfillCanceled, 10_800_000, 2
	noErr(t, tx.BackfillUpdate(ctx, locked))
	canceled, err := tx.ExecutionsCancelPendingOfBackfill(ctx, b.ID, 70)
	noErr(t, err)
	noErr(t, tx.Commit())
	if canceled != 1 {
		t.Fatalf("canceled %d pending runs, want 1", canceled)
	}
	for x, want := range map[*store.Execution]store.ExecutionState{running: store.ExecSucceeded, pending: store.ExecCanceled} {
		g, err := s.ExecutionGet(ctx, x.ID)
		noErr(t, err)
		if g.State != want || g.BackfillID != b.ID || g.IntervalStart != x.IntervalStart || g.IntervalEnd != x.IntervalEnd {
			t.Fatalf("ended run %d: %+v, want %s keeping its interval and backfill", x.ID, g, want)
		}
	}
	if n, _ := s.ExecutionsLiveOfBackfill(ctx, b.ID); n != 0 {
		t.Fatalf("%d live runs after the cancel", n)
	}
	gb, _ = s.BackfillGet(ctx, b.ID)
	if gb.State != store.BackfillCanceled || gb.CursorAt != 10_800_000 || gb.Created != 2 {
		t.Fatalf("updated backfill %+v", gb)
	}
	running2, err := s.BackfillsLockRunning(ctx, 10)
	noErr(t, err)
	if len(running2) != 1 || running2[0].ID != other.ID {
		t.Fatalf("running backfills %+v, want only %d", running2, other.ID)
	}
}
