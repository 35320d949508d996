package sundial

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TriggerNow fires the job once as soon as possible, outside its triggers, and returns the
// new execution's ID.
func (s *Scheduler) TriggerNow(ctx context.Context, jobID int64) (int64, error) {
	ex := &store.Execution{JobID: jobID, ScheduledAt: s.clock.Now().UnixMilli(), Cause: store.CauseManual,
		State: store.ExecPending}
	if _, err := s.store.JobGet(ctx, jobID); err != nil {
		return 0, fmt.Errorf("sundial: trigger job %d now: %w", jobID, err)
	}
	if _, err := s.store.ExecutionsInsert(ctx, []*store.Execution{ex}); err != nil {
		return 0, fmt.Errorf("sundial: trigger job %d now: %w", jobID, err)
	}
	s.engine.Wake()
	return ex.ID, nil
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
	return s.pause(ctx, store.TriggerSelector{JobID: jobID})
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
	if _, err := s.store.TriggersPause(ctx, sel); err != nil {
		return fmt.Errorf("sundial: pause %+v: %w", sel, err)
	}
	return nil
}

func (s *Scheduler) resume(ctx context.Context, sel store.TriggerSelector) error {
	if _, err := s.store.TriggersResume(ctx, sel); err != nil {
		return fmt.Errorf("sundial: resume %+v: %w", sel, err)
	}
	s.engine.Wake()
	return nil
}

// DeleteJob deletes a job and its triggers; its executions stay as history.
func (s *Scheduler) DeleteJob(ctx context.Context, jobID int64) error {
	if err := s.store.JobDelete(ctx, jobID); err != nil {
		return fmt.Errorf("sundial: delete job %d: %w", jobID, err)
	}
	return nil
}

// PutCalendar stores an exclusion calendar under name. spec is one calendar in the form
// `sundial schedule next --calendar` takes (holiday:2024-12-25, weekly:1,7, daily:12:00-13:00,
// ...); base optionally names another stored calendar whose exclusions add to this one's.
func (s *Scheduler) PutCalendar(ctx context.Context, name, spec, base string) error {
	if _, err := schedule.ParseCalendarSpec(spec, time.UTC); err != nil {
		return fmt.Errorf("sundial: calendar %s: %w", name, err)
	}
	if err := s.store.CalendarPut(ctx, &store.Calendar{Name: name, Spec: spec, Base: base}); err != nil {
		return fmt.Errorf("sundial: calendar %s: %w", name, err)
	}
	return nil
}
