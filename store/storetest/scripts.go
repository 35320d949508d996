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
