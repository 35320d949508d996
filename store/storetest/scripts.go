package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testScriptVersions checks a job's script history: versions count up from 1, the newest
// ScriptVersionsKept stay, numbers are not reused after pruning, and deleting the job drops
// its history.
func testScriptVersions(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := &store.Job{Group: "g", Name: "script", TargetKind: store.TargetRemote, Handler: "shell", App: "ops", Enabled: true}
	noErr(t, s.JobInsert(ctx, j))
	other := &store.Job{Group: "g", Name: "other", TargetKind: store.TargetLocal, Handler: "noop", Enabled: true}
	noErr(t, s.JobInsert(ctx, other))

	first := &store.ScriptVersion{JobID: j.ID, Script: "echo 1\n", Note: "first"}
	noErr(t, s.ScriptVersionAdd(ctx, first))
	if first.Version != 1 || first.ID == 0 || first.CreatedAt == 0 {
		t.Fatalf("first version = %+v, want version 1 with id and time", first)
	}
	noErr(t, s.ScriptVersionAdd(ctx, &store.ScriptVersion{JobID: other.ID, Script: "x"}))
	got, err := s.ScriptVersionGet(ctx, j.ID, 1)
	noErr(t, err)
	if got.Script != "echo 1\n" || got.Note != "first" || got.JobID != j.ID {
		t.Fatalf("get version 1 = %+v", got)
	}
	if _, err := s.ScriptVersionGet(ctx, j.ID, 2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing version: err = %v, want ErrNotFound", err)
	}

	total := int64(store.ScriptVersionsKept + 5)
	for i := int64(2); i <= total; i++ {
		v := &store.ScriptVersion{JobID: j.ID, Script: fmt.Sprintf("echo %d\n", i), Note: fmt.Sprint("save ", i)}
		noErr(t, s.ScriptVersionAdd(ctx, v))
		if v.Version != i {
			t.Fatalf("save %d got version %d", i, v.Version)
		}
	}
	list, err := s.ScriptVersionList(ctx, j.ID)
	noErr(t, err)
	if len(list) != store.ScriptVersionsKept {
		t.Fatalf("kept %d versions, want %d", len(list), store.ScriptVersionsKept)
	}
	if list[0].Version != total || list[len(list)-1].Version != total-store.ScriptVersionsKept+1 {
		t.Fatalf("kept versions %d..%d, want %d..%d newest first", list[0].Version, list[len(list)-1].Version,
			total, total-store.ScriptVersionsKept+1)
	}
	if list[0].Script != fmt.Sprintf("echo %d\n", total) {
		t.Fatalf("newest script = %q", list[0].Script)
	}
	if _, err := s.ScriptVersionGet(ctx, j.ID, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pruned version 1: err = %v, want ErrNotFound", err)
	}
	others, err := s.ScriptVersionList(ctx, other.ID)
	noErr(t, err)
	if len(others) != 1 || others[0].Version != 1 {
		t.Fatalf("other job's history = %+v, want its one version untouched", others)
	}

	noErr(t, s.JobDelete(ctx, j.ID))
	list, err = s.ScriptVersionList(ctx, j.ID)
	noErr(t, err)
	if len(list) != 0 {
		t.Fatalf("deleted job keeps %d script versions", len(list))
	}
}

// testExecutionScriptVersion checks that marking a fire running stamps it with its job's
// current script version (the job row carries it from each save), that later saves do not
// change a stamped run, that the history keeps the stamp and a run-now's params, and that a
// job with no script stamps 0.
func testExecutionScriptVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := &store.Job{Group: "g", Name: "stamped", TargetKind: store.TargetRemote, Handler: "shell", App: "ops", Enabled: true}
	noErr(t, s.JobInsert(ctx, j))
	plain := &store.Job{Group: "g", Name: "plain", TargetKind: store.TargetLocal, Handler: "noop", Enabled: true}
	noErr(t, s.JobInsert(ctx, plain))
	equal(t, "new job's script version", get(s.JobGet(ctx, j.ID)).ok(t).ScriptVersion, int64(0))

	noErr(t, s.ScriptVersionAdd(ctx, &store.ScriptVersion{JobID: j.ID, Script: "echo 1"}))
	noErr(t, s.ScriptVersionAdd(ctx, &store.ScriptVersion{JobID: j.ID, Script: "echo 2"}))
	equal(t, "job's script version after two saves", get(s.JobGet(ctx, j.ID)).ok(t).ScriptVersion, int64(2))
	many := get(s.JobsGet(ctx, []int64{j.ID})).ok(t)
	equal(t, "JobsGet script version", many[0].ScriptVersion, int64(2))

	run := func(job int64, params string) *store.Execution {
		x := &store.Execution{JobID: job, ScheduledAt: 10, Cause: store.CauseManual, State: store.ExecAcquired, Node: "n1",
			Params: params}
		get(s.ExecutionsInsert(ctx, []*store.Execution{x})).ok(t)
		equal(t, "acquired execution's script version", get(s.ExecutionGet(ctx, x.ID)).ok(t).ScriptVersion, int64(0))
		sameIDs(t, "marked running", get(s.ExecutionsMarkRunning(ctx, own("n1"), []int64{x.ID}, 20)).ok(t), []int64{x.ID})
		return x
	}
	a := run(j.ID, "")
	noErr(t, s.ScriptVersionAdd(ctx, &store.ScriptVersion{JobID: j.ID, Script: "echo 3"}))
	b := run(j.ID, "--fast")
	p := run(plain.ID, "")
	equal(t, "first run's version while running", get(s.ExecutionGet(ctx, a.ID)).ok(t).ScriptVersion, int64(2))
	equal(t, "second run's version while running", get(s.ExecutionGet(ctx, b.ID)).ok(t).ScriptVersion, int64(3))
	get(s.ExecutionsComplete(ctx, []store.ExecutionResult{
		{ID: a.ID, State: store.ExecSucceeded, FinishedAt: 30}, {ID: b.ID, State: store.ExecFailed, FinishedAt: 30},
		{ID: p.ID, State: store.ExecSucceeded, FinishedAt: 30}})).ok(t)
	ha, hb, hp := get(s.ExecutionGet(ctx, a.ID)).ok(t), get(s.ExecutionGet(ctx, b.ID)).ok(t), get(s.ExecutionGet(ctx, p.ID)).ok(t)
	if ha.State != store.ExecSucceeded || ha.ScriptVersion != 2 || ha.Params != "" {
		t.Fatalf("first run in the history: state %s version %d params %q, want succeeded, 2, none", ha.State, ha.ScriptVersion, ha.Params)
	}
	if hb.ScriptVersion != 3 || hb.Params != "--fast" {
		t.Fatalf("second run in the history: version %d params %q, want 3 and --fast", hb.ScriptVersion, hb.Params)
	}
	equal(t, "plain job's run version", hp.ScriptVersion, int64(0))
	listed := get(s.ExecutionList(ctx, store.ExecutionFilter{JobID: j.ID, Limit: 10})).ok(t)
	if len(listed) != 2 || listed[0].ScriptVersion != 2 || listed[1].ScriptVersion != 3 {
		t.Fatalf("listed runs = %d, versions not 2, 3", len(listed))
	}
}
