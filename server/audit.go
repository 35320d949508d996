package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// The audit log. A handler that changes something describes the change with audited and
// makes it with the returned context: every write path (the Scheduler's methods, the
// engine's retry, the server's own writes) goes through store.InTx, which writes the entry
// with the target's before and after in the change's own transaction.

// snapshotFunc reads an audited target inside the change's transaction.
type snapshotFunc = func(ctx context.Context, q store.Querier) (any, error)

// actor names the principal in the audit log: the user, and the token when one was used.
func actor(p *Principal) string {
	if p == nil {
		return ""
	}
	if p.Via == "token" {
		return p.User.Name + " (token " + strconv.FormatInt(p.TokenID, 10) + ")"
	}
	return p.User.Name
}

// auditedCtx returns ctx carrying the description of the change an operation makes, for the
// caller in ctx.
func (s *Server) auditedCtx(ctx context.Context, action, kind, target string, snap snapshotFunc) context.Context {
	return store.WithAudit(ctx, &store.Audit{Actor: actor(principalFrom(ctx)), Source: sourceFrom(ctx),
		Action: action, TargetKind: kind, Target: target, Snapshot: snap})
}

// jobSnapshot is a job with its triggers, as the API shows it; it records the job's app.
func jobSnapshot(id int64) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		j, err := jobWithTriggers(ctx, q, id)
		if err != nil {
			return nil, err
		}
		store.AuditFrom(ctx).App = j.App
		return j, nil
	}
}

// newJobSnapshot is jobSnapshot for a job being created, found by its key; it records the
// new job's id as the target.
func newJobSnapshot(group, name string) snapshotFunc {
	if group == "" {
		group = "default"
	}
	return func(ctx context.Context, q store.Querier) (any, error) {
		j, err := q.JobGetByKey(ctx, group, name)
		if err != nil {
			return nil, err
		}
		store.AuditFrom(ctx).Target = strconv.FormatInt(j.ID, 10)
		return jobSnapshot(j.ID)(ctx, q)
	}
}

// triggerSnapshot is a trigger as the API shows it.
func triggerSnapshot(id int64) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		t, err := q.TriggerGet(ctx, id)
		if err != nil {
			return nil, err
		}
		return toTriggerOut(t), nil
	}
}

func calendarSnapshot(name string) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		c, err := q.CalendarGet(ctx, name)
		if err != nil {
			return nil, err
		}
		return toCalendarOut(c), nil
	}
}

func appSnapshot(name string) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		a, err := q.AppGet(ctx, name)
		if err != nil {
			return nil, err
		}
		return toAppOut(a), nil
	}
}

func tokenSnapshot(id int64) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		toks, err := q.APITokenList(ctx, 0, id-1, 1)
		if err != nil || len(toks) == 0 || toks[0].ID != id {
			return nil, err
		}
		return tokenOut(toks[0]), nil
	}
}

// auditEvent records an action that changes no row (a kill sent to an executor) in a
// transaction of its own.
func (s *Server) auditEvent(ctx context.Context) error {
	return store.InTx(ctx, s.store, func(store.Querier) error { return nil })
}

func auditOut(e *store.AuditEntry) api.AuditEntry {
	out := api.AuditEntry{ID: e.ID, At: api.Time(e.At), Actor: e.Actor, Source: e.Source, Action: e.Action,
		TargetKind: e.TargetKind, Target: e.Target, App: e.App}
	if e.Before != "" {
		out.Before = json.RawMessage(e.Before)
	}
	if e.After != "" {
		out.After = json.RawMessage(e.After)
	}
	return out
}

// AuditQuery is a page of the audit log, newest first, filtered by actor, action, target and
// time (zero: no bound); After is the last id seen.
type AuditQuery struct {
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`
	TargetKind string    `json:"target_kind"`
	Target     string    `json:"target"`
	From, To   time.Time `json:"-"`
	After      int64     `json:"after"`
	Limit      int       `json:"limit"`
}

// listAudit lists the audit log newest first.
func (s *Server) listAudit(ctx context.Context, in *AuditQuery) (*api.Page[api.AuditEntry], error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	f := store.AuditFilter{Actor: in.Actor, Action: in.Action, TargetKind: in.TargetKind,
		Target: in.Target, BeforeID: in.After, Limit: limit + 1}
	if !in.From.IsZero() {
		f.From = in.From.UnixMilli()
	}
	if !in.To.IsZero() {
		f.To = in.To.UnixMilli()
	}
	es, err := s.store.AuditList(ctx, f)
	if err != nil {
		return nil, err
	}
	page := paginate(es, limit, func(e *store.AuditEntry) string { return strconv.FormatInt(e.ID, 10) }, auditOut)
	return &page, nil
}

func readAuditQuery(r *http.Request, in *AuditQuery) (err error) {
	if in.Limit, in.After, err = idPage(r); err != nil {
		return err
	}
	q := r.URL.Query()
	in.Actor, in.Action, in.TargetKind, in.Target = q.Get("actor"), q.Get("action"), q.Get("target_kind"), q.Get("target")
	if in.From, err = parseTime("from", q.Get("from")); err != nil {
		return err
	}
	in.To, err = parseTime("to", q.Get("to"))
	return err
}
