package sundial

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TriggerNow fires the job once as soon as possible, outside its triggers, and returns the
// new execution's ID.
func (s *Scheduler) TriggerNow(ctx context.Context, jobID int64) (int64, error) {
	return s.TriggerNowWith(ctx, jobID, "")
}

// maxRunParams bounds a run-now's parameters (XXL-JOB's executorParam is 512 characters).
const maxRunParams = 4096

// TriggerNowWith is TriggerNow whose run is given params in place of the job's own (empty:
// the job's); the execution records them and its retries keep them. A script job's params
// are its script, which only a saved version may change, so it takes none.
func (s *Scheduler) TriggerNowWith(ctx context.Context, jobID int64, params string) (int64, error) {
	ex := &store.Execution{JobID: jobID, ScheduledAt: s.clock.Now().UnixMilli(), Cause: store.CauseManual,
		State: store.ExecPending, Params: params}
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		j, err := q.JobGet(ctx, jobID)
		if err != nil {
			return err
		}
		// Again on every attempt of the transaction: sealed at most once per attempt.
		if ex.Params, err = s.runParams(j, params); err != nil {
			return err
		}
		_, err = q.ExecutionsInsert(ctx, []*store.Execution{ex})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sundial: trigger job %d now: %w", jobID, err)
	}
	s.engine.Wake()
	return ex.ID, nil
}

// runParams checks params that runs of job are given in place of the job's own (a run-now's
// or a trigger's) and returns them as they are stored: sealed when the job's params are
// secret, since such a run is as secret as its job. A script job's params are its script,
// which only a saved version may change, so it takes none.
func (s *Scheduler) runParams(j *store.Job, params string) (string, error) {
	switch {
	case params == "":
		return "", nil
	case IsScriptHandler(j.Handler):
		return "", schedule.Fieldf("params", "a %s job runs its saved script: save a new version instead of running it with parameters", j.Handler)
	case len(params) > maxRunParams:
		return "", schedule.Fieldf("params", "must be at most %d bytes, got %d", maxRunParams, len(params))
	case !j.ParamsSecret:
		return params, nil
	}
	sealed, err := s.secrets.Seal(params)
	if err != nil {
		return "", schedule.Fieldf("params", "the job's params are secret, and these cannot be sealed: %v", err)
	}
	return sealed, nil
}

// PauseTrigger stops a trigger from firing until it is resumed.
func (s *Scheduler) PauseTrigger(ctx context.Context, triggerID int64) error {
	return s.pause(ctx, store.TriggerSelector{TriggerID: triggerID})
}

// ResumeTrigger lets a paused trigger fire again. A fire missed while paused by more than the
// misfire threshold is handled by the trigger's misfire policy.
func (s *Scheduler) ResumeTrigger(ctx context.Context, triggerID int64) error {
	return s.resume(ctx, store.TriggerSelector{TriggerID: triggerID})
}

// PauseJob pauses every trigger of the job.
func (s *Scheduler) PauseJob(ctx context.Context, jobID int64) error {
	return s.PauseJobNoted(ctx, jobID, "", "")
}

// MaxPauseNote is the longest note a pause takes, in characters.
const MaxPauseNote = 500

// PauseJobNoted pauses every trigger of the job and records, in the same transaction, who
// paused it and why (FieldError note when the note is longer than MaxPauseNote); the API,
// the CLI and the console show them until the job is resumed.
func (s *Scheduler) PauseJobNoted(ctx context.Context, jobID int64, by, note string) error {
	if n := utf8.RuneCountInString(note); n > MaxPauseNote {
		return fmt.Errorf("sundial: pause job %d: %w", jobID, schedule.Fieldf("note", "at most %d characters, got %d", MaxPauseNote, n))
	}
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		if _, err := q.TriggersPause(ctx, store.TriggerSelector{JobID: jobID}); err != nil {
			return err
		}
		return q.JobSetPause(ctx, jobID, by, note, s.clock.Now().UnixMilli())
	})
	if err != nil {
		return fmt.Errorf("sundial: pause job %d: %w", jobID, err)
	}
	return nil
}

// ResumeJob resumes every trigger of the job.
func (s *Scheduler) ResumeJob(ctx context.Context, jobID int64) error {
	return s.resume(ctx, store.TriggerSelector{JobID: jobID})
}

// PauseGroup pauses a trigger group, including triggers added to it later.
func (s *Scheduler) PauseGroup(ctx context.Context, group string) error {
	return s.pause(ctx, store.TriggerSelector{Group: group})
}

// ResumeGroup resumes a trigger group.
func (s *Scheduler) ResumeGroup(ctx context.Context, group string) error {
	return s.resume(ctx, store.TriggerSelector{Group: group})
}

// PauseAll pauses every trigger, including triggers added later.
func (s *Scheduler) PauseAll(ctx context.Context) error {
	return s.pause(ctx, store.TriggerSelector{All: true})
}

// ResumeAll resumes every trigger.
func (s *Scheduler) ResumeAll(ctx context.Context) error {
	return s.resume(ctx, store.TriggerSelector{All: true})
}

func (s *Scheduler) pause(ctx context.Context, sel store.TriggerSelector) error {
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { _, err := q.TriggersPause(ctx, sel); return err }); err != nil {
		return fmt.Errorf("sundial: pause %+v: %w", sel, err)
	}
	return nil
}

func (s *Scheduler) resume(ctx context.Context, sel store.TriggerSelector) error {
	if err := s.catchUp(ctx, sel); err != nil {
		return fmt.Errorf("sundial: resume %+v: %w", sel, err)
	}
	if err := store.InTx(ctx, s.store, func(q store.Querier) error {
		if _, err := q.TriggersResume(ctx, sel); err != nil {
			return err
		}
		if sel.JobID != 0 {
			// A resumed job's pause note goes with its pause, and its failures in a row count
			// again from 0, so pause on failure pauses it again after as many.
			if _, err := q.JobCountResult(ctx, sel.JobID, false); err != nil {
				return err
			}
			return q.JobSetPause(ctx, sel.JobID, "", "", 0)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("sundial: resume %+v: %w", sel, err)
	}
	s.engine.Wake()
	return nil
}

// catchUp applies, before a resume, the misfire policy of each selected paused trigger whose
// next fire passed during the pause (engine.CatchUpOnResume), while the engine still leaves
// them alone.
func (s *Scheduler) catchUp(ctx context.Context, sel store.TriggerSelector) error {
	now := s.clock.Now()
	var paused []*store.Trigger
	if sel.TriggerID != 0 {
		t, err := s.store.TriggerGet(ctx, sel.TriggerID)
		if err != nil {
			return err
		}
		if t.State == store.TriggerPaused {
			paused = append(paused, t)
		}
		if len(t.Zones) > 1 { // its zone rows were resumed with it
			rows, err := s.store.TriggerList(ctx, store.TriggerFilter{ZoneOf: t.ID, State: store.TriggerPaused, Limit: len(t.Zones)})
			if err != nil {
				return err
			}
			paused = append(paused, rows...)
		}
	} else {
		f := store.TriggerFilter{JobID: sel.JobID, Group: sel.Group, State: store.TriggerPaused, Limit: 1000, WithZoneRows: true}
		for {
			page, err := s.store.TriggerList(ctx, f)
			if err != nil {
				return err
			}
			paused = append(paused, page...)
			if len(page) < f.Limit {
				break
			}
			f.AfterID = page[len(page)-1].ID
		}
	}
	for _, t := range paused {
		if _, err := s.engine.CatchUpOnResume(ctx, t, now); err != nil {
			return err
		}
	}
	return nil
}

// DeleteJobOpts tune DeleteJob.
type DeleteJobOpts struct {
	// Force deletes a job whose runs are in progress: they finish, and their results and
	// output are kept as the history of the deleted job.
	Force bool
}

// DeleteJob deletes a job and its triggers; its executions stay as history. A job with runs
// in progress is refused (store.ErrInUse) unless opts.Force: deleting it silently would
// look as if it stopped them.
func (s *Scheduler) DeleteJob(ctx context.Context, jobID int64, opts DeleteJobOpts) error {
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		if !opts.Force {
			live, err := q.ExecutionsCountLive(ctx, []int64{jobID})
			if err != nil {
				return err
			}
			if n := live[jobID]; n > 0 {
				return fmt.Errorf("job %d has %d run(s) in progress; delete it with force (sundial job delete --force, API ?force=true)"+
					" to let them finish and keep their results and output: %w", jobID, n, store.ErrInUse)
			}
		}
		// The engine ends the workflow nodes that waited on the job's fires it cancels.
		return s.engine.DeleteJobTx(ctx, q, jobID)
	})
	if err != nil {
		return fmt.Errorf("sundial: delete job %d: %w", jobID, err)
	}
	return nil
}

// UpdateJob replaces the settings of an existing job with job's, checked as ScheduleJob
// checks them (child jobs included); its triggers and enabled state stay.
func (s *Scheduler) UpdateJob(ctx context.Context, jobID int64, job Job) error {
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return s.UpdateJobTx(ctx, q, jobID, job) }); err != nil {
		return fmt.Errorf("sundial: update job %d: %w", jobID, err)
	}
	s.engine.JobChanged(jobID)
	return nil
}

// UpdateJobTx is UpdateJob inside the caller's transaction.
func (s *Scheduler) UpdateJobTx(ctx context.Context, q store.Querier, jobID int64, job Job) error {
	row, err := jobRow(job)
	if err != nil {
		return err
	}
	cur, err := q.JobGet(ctx, jobID)
	if err != nil {
		return err
	}
	row.ID, row.Enabled, row.CreatedAt = cur.ID, cur.Enabled, cur.CreatedAt
	if err := s.sealParams(job, row, cur); err != nil {
		return err
	}
	if err := s.sealAlarmTargets(job, row, cur); err != nil {
		return err
	}
	if err := checkChildJobs(ctx, q, jobID, row, cur.ChildJobIDs); err != nil {
		return err
	}
	if err := q.JobUpdate(ctx, row); err != nil {
		return err
	}
	prev := cur.Params
	if !isScript(cur) {
		prev = "" // a job that becomes a script job starts its history with this save
	}
	return recordScript(ctx, q, row, prev, job.ScriptNote, "edited")
}

// JobRow checks job as ScheduleJob and UpdateJob check it (all but its child jobs, which
// need the store) and returns the row they would store, with the defaults filled in: a
// caller that compares a job with a stored one (an import) compares like with like.
func JobRow(job Job) (*store.Job, error) { return jobRow(job) }

// Calendar is a named exclusion calendar that triggers refer to by name.
type Calendar struct {
	Name, Description string
	// Spec is one calendar in the form `sundial schedule next --calendar` takes
	// (holiday:2024-12-25, weekly:1,7, daily:12:00-13:00, ...).
	Spec string
	// Base optionally names another stored calendar whose exclusions add to this one's.
	Base string
	// Zone optionally names the IANA zone the calendar's exclusions are read in, whatever
	// the zone of the trigger it modifies (Quartz's calendar TimeZone). Empty: the trigger's
	// zone. A base calendar is read in its own Zone, or the trigger's.
	Zone string
}

// PutCalendar stores an exclusion calendar, replacing one of the same name.
func (s *Scheduler) PutCalendar(ctx context.Context, c Calendar) error {
	return store.InTx(ctx, s.store, func(q store.Querier) error { return s.PutCalendarTx(ctx, q, c) })
}

// PutCalendarTx is PutCalendar inside the caller's transaction.
func (s *Scheduler) PutCalendarTx(ctx context.Context, q store.Querier, c Calendar) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("sundial: calendar %s: %w", c.Name, schedule.Fieldf(field, format, args...))
	}
	if err := CheckName("name", c.Name); err != nil {
		return fmt.Errorf("sundial: calendar %s: %w", c.Name, err)
	}
	switch {
	case c.Spec == "":
		return bad("spec", "must not be empty (e.g. holiday:2024-12-25 or weekly:1,7)")
	}
	if _, err := schedule.ParseCalendarSpec(c.Spec, time.UTC); err != nil {
		return bad("spec", "%v", err)
	}
	if c.Base == c.Name {
		return bad("base", "a calendar cannot be its own base")
	}
	if c.Zone != "" {
		if _, err := schedule.LoadZone(c.Zone); err != nil {
			return bad("zone", "%v (want an IANA zone such as Europe/Paris, or empty for the trigger's zone)", err)
		}
	}
	row := &store.Calendar{Name: c.Name, Description: c.Description, Spec: c.Spec, Base: c.Base, Zone: c.Zone}
	if err := q.CalendarPut(ctx, row); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return bad("base", "no calendar %q is stored", c.Base)
		}
		return fmt.Errorf("sundial: calendar %s: %w", c.Name, err)
	}
	return nil
}

// DeleteCalendar deletes a stored calendar; it fails (store.ErrInUse) while a trigger or
// another calendar refers to it.
func (s *Scheduler) DeleteCalendar(ctx context.Context, name string) error {
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.CalendarDelete(ctx, name) }); err != nil {
		return fmt.Errorf("sundial: delete calendar %s: %w", name, err)
	}
	return nil
}
