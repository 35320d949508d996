package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// A shell job's script history over the API: creating and each change of the script record
// a version with its note, a save that keeps the script records none, restore makes an older
// text current as a new version, and bad input names its field.
func TestScriptVersionsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newEnv(t, dialect).client()
		ctx := context.Background()
		j, err := c.CreateJob(ctx, api.JobRequest{Name: "cleanup", Handler: "shell", App: "ops", Params: "echo one\n", ScriptNote: "first"})
		if err != nil {
			t.Fatal(err)
		}
		req := j.Request()
		req.Params, req.ScriptNote = "echo two\n", "second"
		if _, err := c.UpdateJob(ctx, j.ID, req); err != nil {
			t.Fatal(err)
		}
		req.ScriptNote = "no change"
		req.MaxRetries = 2
		if _, err := c.UpdateJob(ctx, j.ID, req); err != nil {
			t.Fatal(err)
		}
		vs, err := c.ScriptVersions(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 2 || vs[0].Version != 2 || vs[0].Note != "second" || vs[0].Script != "echo two\n" ||
			vs[1].Version != 1 || vs[1].Note != "first" || vs[1].CreatedAt.IsZero() {
			t.Fatalf("versions = %+v, want 2 (second) then 1 (first)", vs)
		}
		restored, err := c.RestoreScriptVersion(ctx, j.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if restored.Version != 3 || restored.Script != "echo one\n" || restored.Note != "restored version 1" {
			t.Fatalf("restore = %+v", restored)
		}
		got, err := c.GetJob(ctx, j.ID)
		if err != nil || got.Params != "echo one\n" || got.MaxRetries != 2 {
			t.Fatalf("job after restore: %+v, %v", got, err)
		}
		if v, err := c.ScriptVersion(ctx, j.ID, 2); err != nil || v.Script != "echo two\n" {
			t.Fatalf("get version 2: %+v, %v", v, err)
		}
		if _, err := c.ScriptVersion(ctx, j.ID, 9); !api.IsNotFound(err) {
			t.Fatalf("missing version: %v, want not found", err)
		}
		if _, err := c.RestoreScriptVersion(ctx, 99999, 1); !api.IsNotFound(err) {
			t.Fatalf("restore on a missing job: %v, want not found", err)
		}
		req.Params, req.ScriptNote = "echo three\n", strings.Repeat("n", 501)
		_, err = c.UpdateJob(ctx, j.ID, req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != "script_note" {
			t.Fatalf("long note: %#v, want a 400 naming script_note", err)
		}
		if got, _ := c.GetJob(ctx, j.ID); got.Params != "echo one\n" {
			t.Fatalf("a refused save changed the script to %q", got.Params)
		}

		plain, err := c.CreateJob(ctx, api.JobRequest{Name: "plain", Handler: "noop", Params: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if vs, err := c.ScriptVersions(ctx, plain.ID); err != nil || len(vs) != 0 {
			t.Fatalf("a non-script job's versions: %+v, %v", vs, err)
		}
	})
}
