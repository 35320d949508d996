package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// Run carries the plan out through s in one transaction of s's store and fills each item's
// Outcome (and each job's ID, each trigger's Next). It commits only when commit is true; a
// dry run rolls back, after the scheduler has checked and written everything as an apply
// would. An item the scheduler refuses is marked Refused and the rest goes on; any other
// error (the database) ends the run with nothing committed. The node need not be started.
func Run(ctx context.Context, s *sundial.Scheduler, p *Plan, commit bool) error {
	tx, err := s.Store().Begin(ctx)
	if err != nil {
		return fmt.Errorf("importer: %w", err)
	}
	defer tx.Rollback()
	r := &run{s: s, q: tx, p: p, ids: map[Key]int64{}}
	steps := []func(context.Context) error{r.apps, r.calendars, r.jobs, r.children, r.pausedGroups, r.nextTimes}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return fmt.Errorf("importer: %w", err)
		}
	}
	if !commit {
		return nil
	}
	if err := tx.AuditInsert(ctx, &store.AuditEntry{Action: "import.apply", TargetKind: "import", Target: p.Source,
		After: p.summaryLine()}); err != nil {
		return fmt.Errorf("importer: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("importer: commit: %w", err)
	}
	s.Engine().Wake()
	return nil
}

type run struct {
	s   *sundial.Scheduler
	q   store.Querier
	p   *Plan
	ids map[Key]int64 // the plan's jobs, created or found
}

// refused marks o refused when err is the scheduler's refusal of bad input, and says
// whether it was; other errors are the caller's to return.
func refused(o *Outcome, err error) bool {
	if _, ok := schedule.AsField(err); ok {
		o.Action, o.Reason = Refused, err.Error()
		return true
	}
	return false
}

func (r *run) apps(ctx context.Context) error {
	for _, a := range r.p.Apps {
		applyProtocol(a)
		want, err := sundial.AppRow(a.App)
		if refused(&a.Outcome, err) {
			continue
		} else if err != nil {
			return err
		}
		cur, err := r.q.AppGet(ctx, a.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			a.Action = Create
		case err != nil:
			return err
		default:
			if want.Protocol == "" {
				want.Protocol = cur.Protocol
			}
			a.Changes = diff(
				"title", cur.Title, want.Title,
				"address_mode", cur.AddressMode, want.AddressMode,
				"addresses", nilIfEmpty(cur.Addresses), nilIfEmpty(want.Addresses),
				"protocol", cur.Protocol, want.Protocol)
			a.Changes = append(a.Changes, generationChanges(cur, a)...)
			if a.Action = Unchanged; len(a.Changes) > 0 {
				a.Action = Update
			}
		}
		if a.Action == Unchanged {
			continue
		}
		if _, err := r.s.PutAppTx(ctx, r.q, a.App); err != nil && !refused(&a.Outcome, err) {
			return err
		}
	}
	return nil
}

// calendars puts the plan's calendars, each after the base it names when the plan has it.
func (r *run) calendars(ctx context.Context) error {
	done := map[string]bool{}
	inPlan := map[string]bool{}
	for _, c := range r.p.Calendars {
		inPlan[c.Name] = true
	}
	for left := slices.Clone(r.p.Calendars); len(left) > 0; {
		var next []*Calendar
		for _, c := range left {
			if c.Base != "" && inPlan[c.Base] && !done[c.Base] {
				next = append(next, c)
				continue
			}
			done[c.Name] = true
			if err := r.calendar(ctx, c); err != nil {
				return err
			}
		}
		if len(next) == len(left) { // a loop of bases: let the scheduler refuse them
			for _, c := range next {
				done[c.Name] = true
				if err := r.calendar(ctx, c); err != nil {
					return err
				}
			}
			break
		}
		left = next
	}
	return nil
}

func (r *run) calendar(ctx context.Context, c *Calendar) error {
	cur, err := r.q.CalendarGet(ctx, c.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.Action = Create
	case err != nil:
		return err
	default:
		c.Changes = diff("description", cur.Description, c.Description, "spec", cur.Spec, c.Spec, "base", cur.Base, c.Base, "zone", cur.Zone, c.Zone)
		if c.Action = Unchanged; len(c.Changes) == 0 {
			return nil
		}
		c.Action = Update
	}
	if err := r.s.PutCalendarTx(ctx, r.q, c.Calendar); err != nil && !refused(&c.Outcome, err) {
		return err
	}
	return nil
}

// jobs creates or updates every planned job without its child jobs (children may be jobs
// created later in the run, or each other's parents), and its triggers.
func (r *run) jobs(ctx context.Context) error {
	for _, j := range r.p.Jobs {
		for i, t := range j.Triggers {
			if t.Group == "" {
				t.Group = j.Key().Group
			}
			if t.Name == "" {
				t.Name = fmt.Sprintf("%s#%d", j.Name, i+1)
			}
		}
		cur, err := r.q.JobGetByKey(ctx, j.Key().Group, j.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			err = r.createJob(ctx, j)
		case err != nil:
			return err
		default:
			err = r.updateJob(ctx, j, cur)
		}
		if err != nil {
			return err
		}
		if j.Action != Refused {
			r.ids[j.Key()] = j.ID
		}
	}
	return nil
}

func (r *run) createJob(ctx context.Context, j *Job) error {
	j.Action = Create
	// A trigger name another job holds would fail the insert, and a failed statement ends a
	// PostgreSQL transaction: refuse the job before.
	for _, t := range j.Triggers {
		cur, err := r.q.TriggerGetByKey(ctx, t.Group, t.Name)
		if err == nil {
			j.Action, j.Reason = Refused, fmt.Sprintf("its trigger %s/%s is taken by job %d", t.Group, t.Name, cur.JobID)
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	job := j.Job
	job.ChildJobIDs = nil
	saves := j.Scripts
	if len(saves) == 0 || saves[len(saves)-1].Source != j.Params {
		saves = append(slices.Clone(saves), Script{Source: j.Params})
	}
	job.Params, job.ScriptNote = saves[0].Source, saves[0].Note
	trigs := make([]sundial.Trigger, len(j.Triggers))
	for i, t := range j.Triggers {
		trigs[i] = t.Trigger
	}
	id, err := r.s.ScheduleJobTx(ctx, r.q, job, trigs...)
	if refused(&j.Outcome, err) {
		return nil
	} else if err != nil {
		return err
	}
	j.ID = id
	for _, v := range saves[1:] {
		job.Params, job.ScriptNote = v.Source, v.Note
		if err := r.s.UpdateJobTx(ctx, r.q, id, job); err != nil {
			return fmt.Errorf("job %s: script version: %w", j.Key(), err)
		}
	}
	for _, t := range j.Triggers {
		t.Action = Create
		if err := r.startState(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// startState gives a created trigger the state the source had: paused, and its stored fire
// times.
func (r *run) startState(ctx context.Context, t *Trigger) error {
	if t.NextFire.IsZero() && t.PrevFire.IsZero() && t.TimesFired == 0 && !t.Paused {
		return nil
	}
	row, err := r.q.TriggerGetByKey(ctx, t.Group, t.Name)
	if err != nil {
		return err
	}
	if !t.NextFire.IsZero() || !t.PrevFire.IsZero() || t.TimesFired != 0 {
		if !t.NextFire.IsZero() {
			row.NextFireAt = t.NextFire.UnixMilli()
		}
		if !t.PrevFire.IsZero() {
			row.PrevFireAt = t.PrevFire.UnixMilli()
		}
		row.TimesFired = t.TimesFired
		if err := r.q.TriggerUpdate(ctx, row); err != nil {
			return fmt.Errorf("trigger %s/%s: stored state: %w", t.Group, t.Name, err)
		}
	}
	if t.Paused {
		if _, err := r.q.TriggersPause(ctx, store.TriggerSelector{TriggerID: row.ID}); err != nil {
			return fmt.Errorf("trigger %s/%s: pause: %w", t.Group, t.Name, err)
		}
	}
	return nil
}

func (r *run) updateJob(ctx context.Context, j *Job, cur *store.Job) error {
	j.ID = cur.ID
	job := j.Job
	job.ChildJobIDs = cur.ChildJobIDs // children are compared once every job is there
	// No source has an alarm policy: the one set on the job (API, CLI, console) stays.
	job.AlarmPolicy = sundial.AlarmPolicyOf(cur.AlarmPolicy)
	if n := len(j.Scripts); n > 0 {
		job.ScriptNote = j.Scripts[n-1].Note
	}
	want, err := sundial.JobRow(job)
	if refused(&j.Outcome, err) {
		return nil
	} else if err != nil {
		return err
	}
	j.Changes = jobChanges(cur, want)
	if j.Action = Unchanged; len(j.Changes) > 0 {
		j.Action = Update
		if err := r.s.UpdateJobTx(ctx, r.q, cur.ID, job); err != nil && !refused(&j.Outcome, err) {
			return err
		}
		if j.Action == Refused {
			return nil
		}
	}
	for _, t := range j.Triggers {
		if err := r.trigger(ctx, j, t); err != nil {
			return err
		}
	}
	return nil
}

// trigger creates or replaces a trigger of an existing job.
func (r *run) trigger(ctx context.Context, j *Job, t *Trigger) error {
	cur, err := r.q.TriggerGetByKey(ctx, t.Group, t.Name)
	if errors.Is(err, store.ErrNotFound) {
		t.Action = Create
		if _, err := r.s.AddTriggerTx(ctx, r.q, j.ID, t.Trigger); err != nil {
			if refused(&t.Outcome, err) {
				return nil
			}
			return err
		}
		return r.startState(ctx, t)
	}
	if err != nil {
		return err
	}
	if cur.JobID != j.ID {
		t.Action, t.Reason = Refused, fmt.Sprintf("trigger %s/%s belongs to another job (%d)", t.Group, t.Name, cur.JobID)
		return nil
	}
	want, err := r.s.TriggerRowTx(ctx, r.q, j.ID, t.Trigger)
	if refused(&t.Outcome, err) {
		return nil
	} else if err != nil {
		return err
	}
	t.Changes = diff("description", cur.Description, want.Description, "schedule", string(cur.Kind)+cur.Spec, string(want.Kind)+want.Spec,
		"time_zone", cur.TimeZone, want.TimeZone, "end", cur.EndAt, want.EndAt, "calendar", cur.CalendarName, want.CalendarName,
		"priority", cur.Priority, want.Priority, "misfire", cur.MisfirePolicy, want.MisfirePolicy,
		"data", jsonOf(cur.Data), jsonOf(want.Data))
	if t.Action = Unchanged; len(t.Changes) == 0 {
		return nil
	}
	// A changed schedule starts over, as a new trigger would; a paused one stays paused.
	t.Action = Update
	if err := r.q.TriggerDelete(ctx, cur.ID); err != nil {
		return fmt.Errorf("trigger %s/%s: %w", t.Group, t.Name, err)
	}
	if _, err := r.s.AddTriggerTx(ctx, r.q, j.ID, t.Trigger); err != nil {
		return err
	}
	st := *t
	st.Paused = cur.State == store.TriggerPaused
	return r.startState(ctx, &st)
}

// children sets each planned job's child jobs, now that every job has its id.
func (r *run) children(ctx context.Context) error {
	for _, j := range r.p.Jobs {
		if j.Action == Refused {
			continue
		}
		var ids []int64
		for _, k := range j.Children {
			id, ok := r.ids[k]
			if !ok {
				c, err := r.q.JobGetByKey(ctx, k.Group, k.Name)
				if errors.Is(err, store.ErrNotFound) {
					r.p.Unmapped = append(r.p.Unmapped, Unmapped{Item: fmt.Sprintf("%s: child job %s", j.Source, k),
						Reason: "the child job is neither imported nor stored"})
					continue
				} else if err != nil {
					return err
				}
				id = c.ID
			}
			ids = append(ids, id)
		}
		cur, err := r.q.JobGet(ctx, j.ID)
		if err != nil {
			return err
		}
		if slices.Equal(cur.ChildJobIDs, ids) || (len(cur.ChildJobIDs) == 0 && len(ids) == 0) {
			continue
		}
		job := j.Job
		job.ChildJobIDs, job.ScriptNote = ids, ""
		job.AlarmPolicy = sundial.AlarmPolicyOf(cur.AlarmPolicy)
		o := Outcome{}
		if err := r.s.UpdateJobTx(ctx, r.q, j.ID, job); err != nil {
			if !refused(&o, err) {
				return err
			}
			r.p.Unmapped = append(r.p.Unmapped, Unmapped{Item: j.Source + ": child jobs", Reason: o.Reason})
			continue
		}
		if j.Action == Unchanged {
			j.Action = Update
		}
		if j.Action == Update {
			j.Changes = append(j.Changes, "child_job_ids")
		}
	}
	return nil
}

func (r *run) pausedGroups(ctx context.Context) error {
	if len(r.p.PausedGroups) == 0 {
		return nil
	}
	paused, err := r.q.PausedGroups(ctx)
	if err != nil {
		return err
	}
	for _, g := range r.p.PausedGroups {
		if slices.Contains(paused, g) {
			continue
		}
		if _, err := r.q.TriggersPause(ctx, store.TriggerSelector{Group: g}); err != nil {
			return fmt.Errorf("pause group %q: %w", g, err)
		}
		r.p.GroupsPaused = append(r.p.GroupsPaused, g)
	}
	return nil
}

// nextTimes reads back each trigger's next fire time as stored.
func (r *run) nextTimes(ctx context.Context) error {
	for _, j := range r.p.Jobs {
		for _, t := range j.Triggers {
			if j.Action == Refused || t.Action == Refused {
				continue
			}
			row, err := r.q.TriggerGetByKey(ctx, t.Group, t.Name)
			if err != nil {
				return err
			}
			if t.TimeZone == "" {
				t.TimeZone = row.TimeZone // the zone the scheduler chose, to print the time in
			}
			if row.NextFireAt > 0 && row.State != store.TriggerComplete {
				t.Next = time.UnixMilli(row.NextFireAt)
			}
		}
	}
	return nil
}

// jobChanges names the fields where the stored job differs from the wanted row, child jobs
// aside.
func jobChanges(cur, want *store.Job) []string {
	return diff(
		"description", cur.Description, want.Description,
		"handler", cur.Handler, want.Handler,
		"target", cur.TargetKind, want.TargetKind,
		"app", cur.App, want.App,
		"routing", cur.Routing, want.Routing,
		"params", cur.Params, want.Params,
		"data", jsonOf(cur.Data), jsonOf(want.Data),
		"concurrency", cur.Concurrency, want.Concurrency,
		"persist_data", cur.PersistData, want.PersistData,
		"requests_recovery", cur.RequestsRecovery, want.RequestsRecovery,
		"timeout", cur.TimeoutMs, want.TimeoutMs,
		"max_retries", cur.MaxRetries, want.MaxRetries,
		"retry_backoff", cur.RetryBackoffMs, want.RetryBackoffMs,
		"dispatch_timeout", cur.DispatchTimeoutMs, want.DispatchTimeoutMs,
		"alarm_targets", nilIfEmpty(cur.AlarmTargets), nilIfEmpty(want.AlarmTargets))
}

// diff takes name, stored, wanted triples and returns the names whose values differ.
func diff(triples ...any) []string {
	var out []string
	for i := 0; i+2 < len(triples); i += 3 {
		if !reflect.DeepEqual(triples[i+1], triples[i+2]) {
			out = append(out, triples[i].(string))
		}
	}
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// jsonOf is a data map as the store keeps it (JSON), so a planned map compares equal to the
// stored one whatever Go types it was built from.
func jsonOf(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}
