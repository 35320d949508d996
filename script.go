package sundial

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// ScriptHandler is the handler whose Params is a script (run by /bin/sh on an executor).
// Saving such a job records each new script as a version (see Job.ScriptNote).
const ScriptHandler = "shell"

// maxScriptNote bounds a version's note; the store's column holds 500 characters.
const maxScriptNote = 500

// scriptHandlers are the handlers whose params are a program to run: creating or editing a
// job with one needs the scripts permission, which only an admin grants. The names are
// XXL-JOB's GLUE kinds (python2 is its GLUE_PYTHON2) and the shell handler of Sundial's
// executor. Each of them keeps its scripts as versions: XXL-JOB executors run every GLUE kind,
// and an XXL-JOB import brings each one's history.
var scriptHandlers = []string{ScriptHandler, "sh", "bash", "powershell", "python", "python2", "python3", "php", "nodejs", "node", "groovy", "script"}

// ScriptHandlers are the names of the script handlers (IsScriptHandler), for a form that
// switches to a script editor as one is typed.
func ScriptHandlers() []string { return slices.Clone(scriptHandlers) }

// IsScriptHandler reports whether jobs with this handler run code their params carry.
func IsScriptHandler(handler string) bool {
	return slices.Contains(scriptHandlers, strings.ToLower(handler))
}

// isScript reports whether saving the job records its Params as a script version.
func isScript(j *store.Job) bool { return IsScriptHandler(j.Handler) }

// recordScript stores the job's script as its next version when it is a script job whose
// script differs from before (prev is the script before the save, "" for a new job).
func recordScript(ctx context.Context, q store.Querier, j *store.Job, prev, note, fallback string) error {
	if !isScript(j) || j.Params == prev {
		return nil
	}
	if note == "" {
		note = fallback
	}
	if err := q.ScriptVersionAdd(ctx, &store.ScriptVersion{JobID: j.ID, Script: j.Params, Note: note}); err != nil {
		return fmt.Errorf("sundial: job %d: record script version: %w", j.ID, err)
	}
	return nil
}

// checkScriptNote refuses a note the store cannot keep whole.
func checkScriptNote(name, note string) error {
	if n := len([]rune(note)); n > maxScriptNote {
		return fmt.Errorf("sundial: job %s: %w", name, schedule.Fieldf("script_note", "must be at most %d characters, got %d", maxScriptNote, n))
	}
	return nil
}

// RestoreScript makes a kept version of a script job's script its current script, recorded as
// a new version noted with where it came from, and returns that new version.
func (s *Scheduler) RestoreScript(ctx context.Context, jobID, version int64) (*store.ScriptVersion, error) {
	var v *store.ScriptVersion
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		old, err := q.ScriptVersionGet(ctx, jobID, version)
		if err != nil {
			return err
		}
		j, err := q.JobGet(ctx, jobID)
		if err != nil {
			return err
		}
		// A script is never secret: a job that was made secret since its script was saved
		// gets the script back in clear, as it was kept.
		j.Params, j.ParamsSecret = old.Script, false
		if err := q.JobUpdate(ctx, j); err != nil {
			return err
		}
		// A restore is always recorded, even of the current text, so the history shows it.
		v = &store.ScriptVersion{JobID: jobID, Script: old.Script, Note: fmt.Sprintf("restored version %d", version)}
		return q.ScriptVersionAdd(ctx, v)
	})
	if err != nil {
		return nil, fmt.Errorf("sundial: restore script version %d of job %d: %w", version, jobID, err)
	}
	s.engine.JobChanged(jobID)
	return v, nil
}
