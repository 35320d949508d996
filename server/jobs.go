package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

func toJobOut(j *store.Job) api.Job {
	data := j.Data
	if data == nil {
		data = map[string]any{}
	}
	targets := j.AlarmTargets
	if targets == nil {
		targets = []string{}
	}
	children := j.ChildJobIDs
	if children == nil {
		children = []int64{}
	}
	params := j.Params
	if j.ParamsSecret {
		params = secret.Mask // sealed in the store; only runs see them
	}
	return api.Job{ID: j.ID, Group: j.Group, Name: j.Name, Description: j.Description, Target: string(j.TargetKind),
		App: j.App, Routing: j.Routing,
		Handler: j.Handler, Params: params, ParamsSecret: j.ParamsSecret, Data: data, Concurrency: string(j.Concurrency), PersistData: j.PersistData,
		RequestsRecovery: j.RequestsRecovery, TimeoutMs: j.TimeoutMs, MaxRetries: j.MaxRetries,
		RetryBackoffMs: j.RetryBackoffMs, AlarmTargets: targets, ChildJobIDs: children, Enabled: j.Enabled, CreatedAt: api.Time(j.CreatedAt), UpdatedAt: api.Time(j.UpdatedAt)}
}

// jobOf is the request's job for the scheduler, which checks it.
func jobOf(in *api.JobRequest) sundial.Job {
	return sundial.Job{Group: in.Group, Name: in.Name, Description: in.Description, Handler: in.Handler, App: in.App,
		Routing: in.Routing, Params: in.Params, ScriptNote: in.ScriptNote, Data: in.Data, Concurrency: sundial.Concurrency(in.Concurrency),
		PersistData: in.PersistData, RequestsRecovery: in.RequestsRecovery,
		Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, MaxRetries: in.MaxRetries,
		RetryBackoff: time.Duration(in.RetryBackoffMs) * time.Millisecond, AlarmTargets: in.AlarmTargets, ParamsSecret: in.ParamsSecret,
		ChildJobIDs: in.ChildJobIDs}
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) error {
	var in api.JobRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	job := jobOf(&in)
	if err := s.checkAppQuota(r.Context(), job.App, 0); err != nil {
		return err
	}
	trigs := make([]sundial.Trigger, len(in.Triggers))
	for i := range in.Triggers {
		var err error
		if trigs[i], err = triggerOf(&in.Triggers[i]); err != nil {
			return nestField(err, fmt.Sprintf("triggers[%d]", i))
		}
	}
	// The scheduler checks the job and every trigger before its transaction commits, so a
	// bad one stores nothing.
	ctx := s.audited(r, "job.create", "job", "", newJobSnapshot(job.Group, job.Name))
	id, err := s.sched.ScheduleJob(ctx, job, trigs...)
	if err != nil {
		for i := range in.Triggers {
			err = scheduleField(err, fmt.Sprintf("triggers[%d]", i), &in.Triggers[i].Schedule)
		}
		return fmt.Errorf("create job %q: %w", job.Name, err)
	}
	s.log.Info("job created", "job", id, "name", job.Name, "triggers", len(trigs), "by", principalFrom(r.Context()).User.Name)
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	if job.App == "" && !s.handlerKnown(job.Handler) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("no handler %q is registered on this server: its fires will fail "+
			"unless a node that registers it fires them (built in: noop)", job.Handler))
	}
	warn, err := s.jobWarnings(r.Context(), job)
	if err != nil {
		return err
	}
	out.Warnings = append(out.Warnings, warn...)
	for i, t := range trigs {
		out.Warnings = append(out.Warnings, cronWarnings(fmt.Sprintf("triggers[%d].cron", i), t.Schedule)...)
	}
	w.Header().Set("Location", "/api/v1/jobs/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) jobWithTriggers(r *http.Request, id int64) (api.Job, error) {
	return jobWithTriggers(r.Context(), s.store, id)
}

// jobWithTriggers reads a job and its triggers as the API shows them.
func jobWithTriggers(ctx context.Context, q store.Querier, id int64) (api.Job, error) {
	j, err := q.JobGet(ctx, id)
	if err != nil {
		return api.Job{}, err
	}
	out := toJobOut(j)
	ts, err := q.TriggerList(ctx, store.TriggerFilter{JobID: id, Limit: maxPageSize})
	if err != nil {
		return api.Job{}, err
	}
	out.Triggers = make([]api.Trigger, len(ts))
	var paused, waiting bool
	for i, t := range ts {
		out.Triggers[i] = toTriggerOut(t)
		paused = paused || t.State == store.TriggerPaused
		waiting = waiting || t.State == store.TriggerWaiting
	}
	// As store.JobFilter.Paused: it will not fire until someone resumes it.
	out.Paused = paused && !waiting
	return out, nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	limit, after, err := idPage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if name := q.Get("name"); name != "" {
		// One job by its unique key, as a page of zero or one, so a lookup by name reads as
		// any other filtered list.
		group, name := api.SplitJobKey(q.Get("group"), name)
		j, err := s.store.JobGetByKey(r.Context(), group, name)
		page := api.Page[api.Job]{Items: []api.Job{}}
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case j.ID > after && principalFrom(r.Context()).Can(ActRead, j.App):
			page.Items = append(page.Items, toJobOut(j))
			if err := markPaused(r.Context(), s.store, store.JobFilter{AfterID: j.ID - 1}, page.Items); err != nil {
				return err
			}
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	}
	f, err := jobFilter(q)
	if err != nil {
		return err
	}
	f.AfterID, f.Limit, f.Scope = after, limit+1, principalFrom(r.Context()).ReadScope()
	js, err := s.store.JobList(r.Context(), f)
	if err != nil {
		return err
	}
	page := paginate(js, limit, func(j *store.Job) string { return strconv.FormatInt(j.ID, 10) }, toJobOut)
	if err := markPaused(r.Context(), s.store, f, page.Items); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// jobFilter reads the job list's filters: group, app, handler, name_prefix, state.
func jobFilter(q url.Values) (store.JobFilter, error) {
	f := store.JobFilter{Group: q.Get("group"), App: q.Get("app"), Handler: q.Get("handler"), NamePrefix: q.Get("name_prefix")}
	if st := q.Get("state"); st != "" && !f.WithState(st) {
		return f, invalidField("state", "want one of %s, got %q", strings.Join(store.JobStates, ", "), st)
	}
	return f, nil
}

// markPaused sets Paused on a page of jobs listed with f from after: the paused jobs among
// the first len(page)+1 after it are all the paused ones the page can hold, so one query
// answers for the page.
func markPaused(ctx context.Context, q store.Querier, f store.JobFilter, page []api.Job) error {
	if len(page) == 0 {
		return nil
	}
	f.Paused, f.Limit = true, len(page)+1
	ps, err := q.JobList(ctx, f)
	if err != nil {
		return err
	}
	paused := make(map[int64]bool, len(ps))
	for _, j := range ps {
		paused[j.ID] = true
	}
	for i := range page {
		page[i].Paused = paused[page[i].ID]
	}
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// updateJob replaces the job's settings; its triggers are managed under /triggers.
func (s *Server) updateJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in api.JobRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Triggers != nil {
		return invalidField("triggers", "a job's triggers are changed with POST /api/v1/jobs/{id}/triggers and DELETE /api/v1/triggers/{id}")
	}
	job := jobOf(&in)
	row, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return err
	}
	if job.App != row.App {
		if err := s.checkAppQuota(r.Context(), job.App, id); err != nil {
			return err
		}
	}
	ctx := s.audited(r, "job.update", "job", strconv.FormatInt(id, 10), jobSnapshot(id))
	if err := s.sched.UpdateJob(ctx, id, job); err != nil {
		return err
	}
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	warn, err := s.jobWarnings(r.Context(), job)
	if err != nil {
		return err
	}
	out.Warnings = append(out.Warnings, warn...)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// jobWarnings are the warnings about a job its create and update answer with: alarm targets
// that cannot be reached, secret params that would travel in clear.
func (s *Server) jobWarnings(ctx context.Context, job sundial.Job) ([]string, error) {
	warn := s.alarmWarnings(job.AlarmTargets)
	if !job.ParamsSecret {
		return warn, nil
	}
	clearText, err := s.clearSecrets(ctx, job.App)
	return append(warn, clearText...), err
}

// alarmWarnings warns of e-mail targets when this node has no mail server: the leader may
// be another node that has one, so they are not refused.
func (s *Server) alarmWarnings(targets []string) []string {
	if s.cfg.SMTP.Addr != "" {
		return nil
	}
	for _, raw := range targets {
		if t, err := alarm.ParseTarget(raw); err == nil && t.Kind == alarm.Email {
			return []string{"this server has no SMTP server (--smtp-addr): e-mail alarms fail unless the leader node has one"}
		}
	}
	return nil
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var opts sundial.DeleteJobOpts
	if v := r.URL.Query().Get("force"); v != "" {
		if opts.Force, err = strconv.ParseBool(v); err != nil {
			return invalidField("force", "want true or false, got %q", v)
		}
	}
	ctx := s.audited(r, "job.delete", "job", strconv.FormatInt(id, 10), jobSnapshot(id))
	if err := s.sched.DeleteJob(ctx, id, opts); err != nil {
		return err
	}
	s.log.Info("job deleted", "job", id, "by", principalFrom(r.Context()).User.Name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pauseJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobAction(w, r, "job.pause", s.sched.PauseJob)
}

func (s *Server) resumeJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobAction(w, r, "job.resume", s.sched.ResumeJob)
}

// jobAction runs a pause or resume on an existing job and returns the job as it is after.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request, action string, act func(ctx context.Context, id int64) error) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := s.store.JobGet(r.Context(), id); err != nil {
		return err
	}
	if err := act(s.audited(r, action, "job", strconv.FormatInt(id, 10), jobSnapshot(id)), id); err != nil {
		return err
	}
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// runJob fires the job once now, outside its triggers.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	// The body is optional: without one the run gets the job's params.
	var in api.RunRequest
	if err := decodeOptional(r, &in); err != nil {
		return err
	}
	// The job is the target; its state does not change, so the entry has no before/after.
	ctx := s.audited(r, "job.run", "job", strconv.FormatInt(id, 10), nil)
	execID, err := s.sched.TriggerNowWith(ctx, id, in.Params)
	if err != nil {
		return err
	}
	x, err := s.store.ExecutionGet(r.Context(), execID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/executions/"+strconv.FormatInt(execID, 10))
	writeJSON(w, http.StatusAccepted, toExecutionOut(x))
	return nil
}
