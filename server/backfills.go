package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// BackfillAdd asks for a backfill of a job (POST /jobs/{id}/backfills).
type BackfillAdd struct {
	JobID int64
	api.BackfillRequest
}

// BackfillRef names one backfill.
type BackfillRef struct{ ID int64 }

// The bounds of a backfill's concurrency and chunk: a backfill is a batch job, not a load test.
const (
	maxBackfillConcurrent = 100
	maxBackfillChunk      = 10_000
)

// createBackfill plans a backfill of the job's trigger and, unless a dry run, stores it.
func (s *Server) createBackfill(ctx context.Context, in *BackfillAdd) (*api.Backfill, error) {
	from, err := api.ParseTime("from", in.From)
	if err != nil {
		return nil, err
	}
	to, err := api.ParseTime("to", in.To)
	if err != nil {
		return nil, err
	}
	switch {
	case from.IsZero():
		return nil, invalidField("from", "want the range's first instant (RFC 3339)")
	case to.IsZero():
		return nil, invalidField("to", "want the range's last instant (RFC 3339)")
	case to.Before(from):
		return nil, invalidField("to", "%s is before from %s", in.To, in.From)
	case in.MaxConcurrent < 0 || in.MaxConcurrent > maxBackfillConcurrent:
		return nil, invalidField("max_concurrent", "want 1 to %d, got %d", maxBackfillConcurrent, in.MaxConcurrent)
	case in.Chunk < 0 || in.Chunk > maxBackfillChunk:
		return nil, invalidField("chunk", "want 1 to %d, got %d", maxBackfillChunk, in.Chunk)
	}
	tr, err := s.backfillTrigger(ctx, in.JobID, in.Trigger)
	if err != nil {
		return nil, err
	}
	eng := s.sched.Engine()
	if in.DryRun {
		runs, err := eng.PlanBackfill(ctx, tr, from, to, in.Chunk)
		if err != nil {
			return nil, err
		}
		out := api.Backfill{JobID: in.JobID, TriggerID: tr.ID, From: api.Time(from.UnixMilli()), To: api.Time(to.UnixMilli()),
			MaxConcurrent: max(in.MaxConcurrent, 1), Chunk: max(in.Chunk, 1), Plan: make([]api.BackfillRun, len(runs))}
		for i, r := range runs {
			times := make([]api.Time, len(r.Times))
			for j, t := range r.Times {
				times[j] = api.Time(t.UnixMilli())
			}
			out.Plan[i] = api.BackfillRun{IntervalStart: api.Time(r.Start.UnixMilli()), IntervalEnd: api.Time(r.End.UnixMilli()), Times: times}
			out.Total += int64(len(times))
		}
		return &out, nil
	}
	actx := s.auditedCtx(ctx, "job.backfill", "job", strconv.FormatInt(in.JobID, 10), nil)
	b, err := eng.CreateBackfill(actx, engine.BackfillRequest{TriggerID: tr.ID, From: from, To: to,
		MaxConcurrent: in.MaxConcurrent, Chunk: in.Chunk, CreatedBy: actor(principalFrom(ctx))})
	if err != nil {
		return nil, err
	}
	out := toBackfillOut(b)
	return &out, nil
}

// backfillTrigger is the job's trigger a backfill follows: the one named, which must be the
// job's, or the job's only one.
func (s *Server) backfillTrigger(ctx context.Context, jobID, triggerID int64) (*store.Trigger, error) {
	if _, err := s.store.JobGet(ctx, jobID); err != nil {
		return nil, err
	}
	if triggerID != 0 {
		tr, err := s.store.TriggerGet(ctx, triggerID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && tr.JobID != jobID) {
			return nil, invalidField("trigger", "job %d has no trigger %d", jobID, triggerID)
		}
		return tr, err
	}
	ts, err := s.store.TriggerList(ctx, store.TriggerFilter{JobID: jobID, Limit: 2})
	if err != nil {
		return nil, err
	}
	if len(ts) != 1 {
		return nil, invalidField("trigger", "job %d has %d triggers: name the one whose schedule the backfill follows", jobID, len(ts))
	}
	return ts[0], nil
}

func (s *Server) listBackfills(ctx context.Context, in *JobRef) (*[]api.Backfill, error) {
	bs, err := s.store.BackfillList(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := make([]api.Backfill, len(bs))
	for i, b := range bs {
		out[i] = toBackfillOut(b)
	}
	return &out, nil
}

func (s *Server) getBackfill(ctx context.Context, in *BackfillRef) (*api.Backfill, error) {
	b, err := s.store.BackfillGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := toBackfillOut(b)
	return &out, nil
}

func (s *Server) cancelBackfill(ctx context.Context, in *BackfillRef) (*api.Backfill, error) {
	b, err := s.store.BackfillGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	actx := s.auditedCtx(ctx, "backfill.cancel", "job", strconv.FormatInt(b.JobID, 10), nil)
	if b, err = s.sched.Engine().CancelBackfill(actx, in.ID); err != nil {
		return nil, err
	}
	out := toBackfillOut(b)
	return &out, nil
}

// backfillTarget is the app of the backfill's job.
func (s *Server) backfillTarget(ctx context.Context, id int64) (target, error) {
	b, err := s.store.BackfillGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, nil
	}
	if err != nil {
		return target{}, err
	}
	return s.jobIDTarget(ctx, b.JobID)
}

func toBackfillOut(b *store.Backfill) api.Backfill {
	return api.Backfill{ID: b.ID, JobID: b.JobID, TriggerID: b.TriggerID, From: api.Time(b.FromAt), To: api.Time(b.ToAt),
		MaxConcurrent: b.MaxConcurrent, Chunk: b.Chunk, State: string(b.State), Total: b.Total, Created: b.Created,
		CreatedBy: b.CreatedBy, CreatedAt: api.Time(b.CreatedAt)}
}

// The backfills' HTTP binding.

func readBackfillAdd(r *http.Request, in *BackfillAdd) (err error) {
	if in.JobID, err = pathID(r, "id"); err != nil {
		return err
	}
	return decodeOp(r, &in.BackfillRequest)
}

func readBackfillRef(r *http.Request, in *BackfillRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

// writeBackfillAdded answers 201 for a stored backfill, 200 for a dry run's plan.
func writeBackfillAdded(w http.ResponseWriter, _ *http.Request, b *api.Backfill) error {
	if b.ID == 0 {
		writeJSON(w, http.StatusOK, b)
		return nil
	}
	w.Header().Set("Location", "/api/v1/backfills/"+strconv.FormatInt(b.ID, 10))
	writeJSON(w, http.StatusCreated, b)
	return nil
}
