package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TriggerRef names a trigger by its id.
type TriggerRef struct {
	ID int64 `json:"-"`
}

// TriggerAdd adds a trigger to job JobID.
type TriggerAdd struct {
	JobID int64 `json:"-"`
	api.TriggerRequest
}

// JobTriggers is a page of a job's triggers.
type JobTriggers struct {
	JobID int64 `json:"-"`
	After int64 `json:"after"`
	Limit int   `json:"limit"`
}

// TriggerPage is a page of triggers; More says another follows the last.
type TriggerPage struct {
	Triggers []*store.Trigger
	More     bool
}

// TriggerNextQuery previews a trigger's next N fires (default 10).
type TriggerNextQuery struct {
	ID int64 `json:"-"`
	N  int   `json:"n"`
	// After lists the times the schedule and calendar give strictly after it, whatever the
	// trigger's state (zero: the next fires as the scheduler will fire them).
	After time.Time `json:"-"`
}

// TriggerPolicyUpdate changes the policies of trigger ID.
type TriggerPolicyUpdate struct {
	ID int64 `json:"-"`
	api.TriggerPolicy
}

// NextFiresQuery lists the waiting triggers of the caller's apps by their next fire, the
// soonest first.
type NextFiresQuery struct {
	Limit int `json:"limit"`
}

func (s *Server) listJobTriggers(ctx context.Context, in *JobTriggers) (*TriggerPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	if _, err := s.store.JobGet(ctx, in.JobID); err != nil {
		return nil, err
	}
	ts, err := s.store.TriggerList(ctx, store.TriggerFilter{JobID: in.JobID, AfterID: in.After, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := &TriggerPage{}
	page.Triggers, page.More = cut(ts, limit)
	return page, nil
}

func (s *Server) nextFires(ctx context.Context, in *NextFiresQuery) (*TriggerPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	// Each zone of a trigger of several zones has its own next fire: its zone rows are listed.
	ts, err := s.store.TriggerList(ctx, store.TriggerFilter{State: store.TriggerWaiting, ByNextFire: true, Limit: limit,
		Scope: principalFrom(ctx).ReadScope(), WithZoneRows: true})
	if err != nil {
		return nil, err
	}
	return &TriggerPage{Triggers: ts}, nil
}

func (s *Server) addTrigger(ctx context.Context, in *TriggerAdd) (*api.Trigger, error) {
	id := in.JobID
	job, err := s.store.JobGet(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err := triggerOf(&in.TriggerRequest)
	if err != nil {
		return nil, err
	}
	if t.Group == "" {
		t.Group = job.Group // as on create: JOB#N is unique where the job's name is
	}
	if t.Name == "" {
		// The job's first triggers are named job#1, job#2, ... on create; continue the count.
		n, err := s.store.TriggerList(ctx, store.TriggerFilter{JobID: id, Limit: maxPageSize})
		if err != nil {
			return nil, err
		}
		t.Name = fmt.Sprintf("%s#%d", job.Name, len(n)+1)
	}
	actx := s.auditedCtx(ctx, "trigger.create", "trigger", "", func(ctx context.Context, q store.Querier) (any, error) {
		row, err := q.TriggerGetByKey(ctx, t.Group, t.Name)
		if err != nil {
			return nil, err
		}
		a := store.AuditFrom(ctx)
		a.Target, a.App = strconv.FormatInt(row.ID, 10), job.App
		return toTriggerOut(row), nil
	})
	if err := s.sched.AddTrigger(actx, id, t); err != nil {
		return nil, fmt.Errorf("add trigger to job %d: %w", id, scheduleField(err, "", &in.Schedule))
	}
	row, err := s.store.TriggerGetByKey(ctx, t.Group, t.Name)
	if err != nil {
		return nil, err
	}
	out := toTriggerOut(row)
	out.Warnings = cronWarnings("cron", t.Schedule)
	return &out, nil
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

func (s *Server) getTrigger(ctx context.Context, in *TriggerRef) (*store.Trigger, error) {
	return s.store.TriggerGet(ctx, in.ID)
}

func (s *Server) deleteTrigger(ctx context.Context, in *TriggerRef) (*store.Trigger, error) {
	id := in.ID
	t, err := s.store.TriggerGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := notZoneRow(t); err != nil {
		return nil, err
	}
	actx := s.auditedCtx(ctx, "trigger.delete", "trigger", strconv.FormatInt(id, 10), triggerSnapshot(id))
	if err := store.InTx(actx, s.store, func(q store.Querier) error { return q.TriggerDelete(actx, id) }); err != nil {
		return nil, err
	}
	return t, nil
}

// updateTrigger changes a stored trigger's policies, read as a new trigger's are
// (api.TriggerRequest's parsers) and checked by the scheduler.
func (s *Server) updateTrigger(ctx context.Context, in *TriggerPolicyUpdate) (*store.Trigger, error) {
	var p sundial.TriggerPolicy
	in2 := api.TriggerRequest{}
	if v := in.Misfire; v != nil {
		in2.Misfire = *v
		m, err := in2.MisfirePolicy()
		if err != nil {
			return nil, err
		}
		p.Misfire = &m
	}
	if v := in.DST; v != nil {
		in2.DST = *v
		d, err := in2.DSTPolicy()
		if err != nil {
			return nil, err
		}
		p.DST = &d
	}
	if v := in.CatchUpWindow; v != nil {
		in2.CatchUpWindow = *v
		w, _, err := in2.CatchUpPolicy()
		if err != nil {
			return nil, err
		}
		p.CatchUpWindow = &w
	}
	if v := in.JitterMs; v != nil {
		// Checked before it becomes a Duration, which a count of milliseconds could overflow.
		if err := schedule.ValidateJitter(*v); err != nil {
			return nil, err
		}
		j := time.Duration(*v) * time.Millisecond
		p.Jitter = &j
	}
	p.CatchUp, p.Priority = in.CatchUp, in.Priority
	actx := s.auditedCtx(ctx, "trigger.update", "trigger", strconv.FormatInt(in.ID, 10), triggerSnapshot(in.ID))
	return s.sched.UpdateTriggerPolicy(actx, in.ID, p)
}

func (s *Server) pauseTrigger(ctx context.Context, in *TriggerRef) (*store.Trigger, error) {
	return s.triggerAction(ctx, in.ID, "trigger.pause", s.sched.PauseTrigger)
}

func (s *Server) resumeTrigger(ctx context.Context, in *TriggerRef) (*store.Trigger, error) {
	return s.triggerAction(ctx, in.ID, "trigger.resume", s.sched.ResumeTrigger)
}

func (s *Server) triggerAction(ctx context.Context, id int64, action string, act func(ctx context.Context, id int64) error) (*store.Trigger, error) {
	t, err := s.store.TriggerGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := notZoneRow(t); err != nil {
		return nil, err
	}
	if err := act(s.auditedCtx(ctx, action, "trigger", strconv.FormatInt(id, 10), triggerSnapshot(id)), id); err != nil {
		return nil, err
	}
	return s.store.TriggerGet(ctx, id)
}

// notZoneRow refuses to act on a zone row of a trigger of several zones (store.Trigger.ZoneOf)
// alone: the trigger is paused, resumed and deleted as a whole, by its own id.
func notZoneRow(t *store.Trigger) error {
	if t.ZoneOf != 0 {
		return invalidField("id", "trigger %d is the zone %s of trigger %d: act on that one", t.ID, t.TimeZone, t.ZoneOf)
	}
	return nil
}

// triggerNext previews a stored trigger's next fire times as the scheduler will fire them:
// its calendar and, when its pending fire is already too late, its misfire policy applied.
// With After it lists the times its schedule and calendar give after that instant instead.
func (s *Server) triggerNext(ctx context.Context, in *TriggerNextQuery) (*api.TriggerNext, error) {
	n := in.N
	if n == 0 {
		n = 10
	}
	if n < 1 || n > maxPageSize {
		return nil, invalidField("n", "want an integer from 1 to %d, got %d", maxPageSize, n)
	}
	t, err := s.store.TriggerGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	rows := []*store.Trigger{t}
	if len(t.Zones) > 1 {
		zr, err := s.store.TriggerList(ctx, store.TriggerFilter{ZoneOf: t.ID, Limit: len(t.Zones)})
		if err != nil {
			return nil, err
		}
		rows = append(rows, zr...)
	}
	ps, zones := make([]engine.Preview, len(rows)), make([]string, len(rows))
	for i, row := range rows {
		if in.After.IsZero() {
			ps[i], err = s.sched.Engine().PreviewTrigger(ctx, row, s.clock.Now(), n)
		} else {
			ps[i], err = s.sched.Engine().PreviewTriggerAfter(ctx, row, in.After, n)
		}
		if err != nil {
			return nil, err
		}
		zones[i] = row.TimeZone
	}
	p := ps[0]
	if len(rows) > 1 {
		p = engine.MergeZones(ps, zones, n)
	}
	out := api.TriggerNext{TriggerID: t.ID, TimeZone: t.TimeZone, State: string(t.State), Misfired: p.Misfired,
		Fires: make([]string, len(p.Fires))}
	if !in.After.IsZero() {
		out.After = api.FormatZoned(in.After)
	}
	for i, f := range p.Fires {
		out.Fires[i] = api.FormatZoned(f)
	}
	for _, d := range p.Due {
		out.Due = append(out.Due, api.FormatZoned(d))
	}
	out.DST, out.Zones = p.DST, p.Zones
	return &out, nil
}

// The triggers' HTTP binding.

func readTriggerRef(r *http.Request, in *TriggerRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

func readTriggerAdd(r *http.Request, in *TriggerAdd) (err error) {
	if in.JobID, err = pathID(r, "id"); err != nil {
		return err
	}
	return decodeOp(r, &in.TriggerRequest)
}

func readTriggerPolicy(r *http.Request, in *TriggerPolicyUpdate) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	return decodeOp(r, &in.TriggerPolicy)
}

func readJobTriggers(r *http.Request, in *JobTriggers) (err error) {
	if in.JobID, err = pathID(r, "id"); err != nil {
		return err
	}
	in.Limit, in.After, err = idPage(r)
	return err
}

func readTriggerNext(r *http.Request, in *TriggerNextQuery) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	if v := r.URL.Query().Get("n"); v != "" {
		if in.N, err = strconv.Atoi(v); err != nil || in.N < 1 || in.N > maxPageSize {
			return invalidField("n", "want an integer from 1 to %d, got %q", maxPageSize, v)
		}
	}
	if v := r.URL.Query().Get("after"); v != "" {
		if in.After, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return invalidField("after", "want an RFC 3339 time, got %q", v)
		}
	}
	return nil
}

func writeTriggerPage(w http.ResponseWriter, _ *http.Request, p *TriggerPage) error {
	writeJSON(w, http.StatusOK, pageOut(p.Triggers, p.More, func(t *store.Trigger) string { return strconv.FormatInt(t.ID, 10) }, toTriggerOut))
	return nil
}

func writeTriggerAdded(w http.ResponseWriter, _ *http.Request, t *api.Trigger) error {
	w.Header().Set("Location", "/api/v1/triggers/"+strconv.FormatInt(t.ID, 10))
	writeJSON(w, http.StatusCreated, t)
	return nil
}
