package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

func (s *Server) listJobTriggers(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	limit, after, err := idPage(r)
	if err != nil {
		return err
	}
	if _, err := s.store.JobGet(r.Context(), id); err != nil {
		return err
	}
	ts, err := s.store.TriggerList(r.Context(), store.TriggerFilter{JobID: id, AfterID: after, Limit: limit + 1})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(ts, limit, func(t *store.Trigger) string { return strconv.FormatInt(t.ID, 10) }, toTriggerOut))
	return nil
}

func (s *Server) addTrigger(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in api.TriggerRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	job, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return err
	}
	t, err := triggerOf(&in)
	if err != nil {
		return err
	}
	if t.Group == "" {
		t.Group = job.Group // as on create: JOB#N is unique where the job's name is
	}
	if t.Name == "" {
		// The job's first triggers are named job#1, job#2, ... on create; continue the count.
		n, err := s.store.TriggerList(r.Context(), store.TriggerFilter{JobID: id, Limit: maxPageSize})
		if err != nil {
			return err
		}
		t.Name = fmt.Sprintf("%s#%d", job.Name, len(n)+1)
	}
	ctx := s.audited(r, "trigger.create", "trigger", "", func(ctx context.Context, q store.Querier) (any, error) {
		row, err := q.TriggerGetByKey(ctx, t.Group, t.Name)
		if err != nil {
			return nil, err
		}
		a := store.AuditFrom(ctx)
		a.Target, a.App = strconv.FormatInt(row.ID, 10), job.App
		return toTriggerOut(row), nil
	})
	if err := s.sched.AddTrigger(ctx, id, t); err != nil {
		return fmt.Errorf("add trigger to job %d: %w", id, scheduleField(err, "", &in.Schedule))
	}
	row, err := s.store.TriggerGetByKey(r.Context(), t.Group, t.Name)
	if err != nil {
		return err
	}
	out := toTriggerOut(row)
	out.Warnings = cronWarnings("cron", t.Schedule)
	w.Header().Set("Location", "/api/v1/triggers/"+strconv.FormatInt(row.ID, 10))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// cronWarnings are a cron schedule's valid but surprising parts (Quartz's leniency, such as
// MON/2 read as MON), each naming the field, for the answer to the request that stored it.
func cronWarnings(field string, sched schedule.Schedule) []string {
	c, ok := sched.(*schedule.Cron)
	if !ok {
		return nil
	}
	var out []string
	for _, w := range c.Warnings() {
		out = append(out, field+": "+w)
	}
	return out
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) error {
	return getByID(w, r, s.store.TriggerGet, toTriggerOut)
}

func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	ctx := s.audited(r, "trigger.delete", "trigger", strconv.FormatInt(id, 10), triggerSnapshot(id))
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.TriggerDelete(ctx, id) }); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pauseTrigger(w http.ResponseWriter, r *http.Request) error {
	return s.triggerAction(w, r, "trigger.pause", s.sched.PauseTrigger)
}

func (s *Server) resumeTrigger(w http.ResponseWriter, r *http.Request) error {
	return s.triggerAction(w, r, "trigger.resume", s.sched.ResumeTrigger)
}

func (s *Server) triggerAction(w http.ResponseWriter, r *http.Request, action string, act func(ctx context.Context, id int64) error) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := s.store.TriggerGet(r.Context(), id); err != nil {
		return err
	}
	if err := act(s.audited(r, action, "trigger", strconv.FormatInt(id, 10), triggerSnapshot(id)), id); err != nil {
		return err
	}
	t, err := s.store.TriggerGet(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTriggerOut(t))
	return nil
}

// triggerNext previews a stored trigger's next fire times as the scheduler will fire them:
// its calendar and, when its pending fire is already too late, its misfire policy applied.
// With ?after= it lists the times its schedule and calendar give after that instant instead.
func (s *Server) triggerNext(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	n := 10
	if v := r.URL.Query().Get("n"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > maxPageSize {
			return invalidField("n", "want an integer from 1 to %d, got %q", maxPageSize, v)
		}
	}
	var after time.Time
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return invalidField("after", "want an RFC 3339 time, got %q", v)
		}
	}
	t, err := s.store.TriggerGet(r.Context(), id)
	if err != nil {
		return err
	}
	var p engine.Preview
	if after.IsZero() {
		p, err = s.sched.Engine().PreviewTrigger(r.Context(), t, s.clock.Now(), n)
	} else {
		p, err = s.sched.Engine().PreviewTriggerAfter(r.Context(), t, after, n)
	}
	if err != nil {
		return err
	}
	out := api.TriggerNext{TriggerID: t.ID, TimeZone: t.TimeZone, State: string(t.State), Misfired: p.Misfired,
		Fires: make([]string, len(p.Fires))}
	if !after.IsZero() {
		out.After = api.FormatZoned(after)
	}
	for i, f := range p.Fires {
		out.Fires[i] = api.FormatZoned(f)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
