package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/store"
)

// jobIn is a job as a request gives it; Triggers only on create.
type jobIn struct {
	Group            string         `json:"group"`
	Name             string         `json:"name"`
	Description      string         `json:"description"`
	Handler          string         `json:"handler"`
	App              string         `json:"app"`
	Routing          string         `json:"routing"`
	Params           string         `json:"params"`
	Data             map[string]any `json:"data"`
	Concurrency      string         `json:"concurrency"`
	PersistData      bool           `json:"persist_data"`
	RequestsRecovery bool           `json:"requests_recovery"`
	TimeoutMs        int64          `json:"timeout_ms"`
	MaxRetries       int            `json:"max_retries"`
	RetryBackoffMs   int64          `json:"retry_backoff_ms"`
	AlarmTargets     []string       `json:"alarm_targets"`
	Triggers         []triggerIn    `json:"triggers"`
}

type jobOut struct {
	ID               int64          `json:"id"`
	Group            string         `json:"group"`
	Name             string         `json:"name"`
	Description      string         `json:"description"`
	Target           string         `json:"target"`
	App              string         `json:"app,omitempty"`
	Routing          string         `json:"routing,omitempty"`
	Handler          string         `json:"handler"`
	Params           string         `json:"params"`
	Data             map[string]any `json:"data"`
	Concurrency      string         `json:"concurrency"`
	PersistData      bool           `json:"persist_data"`
	RequestsRecovery bool           `json:"requests_recovery"`
	TimeoutMs        int64          `json:"timeout_ms"`
	MaxRetries       int            `json:"max_retries"`
	RetryBackoffMs   int64          `json:"retry_backoff_ms"`
	AlarmTargets     []string       `json:"alarm_targets"`
	Enabled          bool           `json:"enabled"`
	CreatedAt        msTime         `json:"created_at"`
	UpdatedAt        msTime         `json:"updated_at"`
	// Triggers are included when one job is returned.
	Triggers []triggerOut `json:"triggers,omitempty"`
	// Warnings tell what may not work as meant, such as a handler no node here runs.
	Warnings []string `json:"warnings,omitempty"`
}

func toJobOut(j *store.Job) jobOut {
	data := j.Data
	if data == nil {
		data = map[string]any{}
	}
	targets := j.AlarmTargets
	if targets == nil {
		targets = []string{}
	}
	return jobOut{ID: j.ID, Group: j.Group, Name: j.Name, Description: j.Description, Target: string(j.TargetKind),
		App: j.App, Routing: j.Routing,
		Handler: j.Handler, Params: j.Params, Data: data, Concurrency: string(j.Concurrency), PersistData: j.PersistData,
		RequestsRecovery: j.RequestsRecovery, TimeoutMs: j.TimeoutMs, MaxRetries: j.MaxRetries,
		RetryBackoffMs: j.RetryBackoffMs, AlarmTargets: targets, Enabled: j.Enabled, CreatedAt: msTime(j.CreatedAt), UpdatedAt: msTime(j.UpdatedAt)}
}

// validate checks the job's own fields and returns it for the embedding API.
func (in *jobIn) validate() (sundial.Job, error) {
	switch {
	case in.Name == "":
		return sundial.Job{}, invalidField("name", "must not be empty")
	case in.Handler == "":
		return sundial.Job{}, invalidField("handler", "must not be empty: name the handler that runs the job (e.g. noop)")
	case in.TimeoutMs < 0:
		return sundial.Job{}, invalidField("timeout_ms", "must not be negative, got %d", in.TimeoutMs)
	case in.MaxRetries < 0:
		return sundial.Job{}, invalidField("max_retries", "must not be negative, got %d", in.MaxRetries)
	case in.RetryBackoffMs < 0:
		return sundial.Job{}, invalidField("retry_backoff_ms", "must not be negative, got %d", in.RetryBackoffMs)
	case in.Routing != "" && in.App == "":
		return sundial.Job{}, invalidField("routing", "needs an app: routing picks among an app's executors")
	}
	if _, err := alarm.ParseTargets(in.AlarmTargets); err != nil {
		var te *alarm.TargetError
		if errors.As(err, &te) {
			return sundial.Job{}, invalidField(fmt.Sprintf("alarm_targets[%d]", te.Index), "%v", te.Err)
		}
		return sundial.Job{}, invalidField("alarm_targets", "%v", err)
	}
	routing := in.Routing
	if in.App != "" {
		st, err := dispatch.ParseStrategy(in.Routing)
		if err != nil {
			return sundial.Job{}, invalidField("routing", "%v", err)
		}
		routing = string(st)
	}
	conc := sundial.Concurrency(in.Concurrency)
	switch conc {
	case "":
		conc = sundial.Allow
	case sundial.Allow, sundial.Serial, sundial.Discard, sundial.Replace:
	default:
		return sundial.Job{}, invalidField("concurrency", "want allow, serial, discard or replace, got %q", in.Concurrency)
	}
	group := in.Group
	if group == "" {
		group = "default"
	}
	return sundial.Job{Group: group, Name: in.Name, Description: in.Description, Handler: in.Handler, App: in.App,
		Routing: routing, Params: in.Params,
		Data: in.Data, Concurrency: conc, PersistData: in.PersistData, RequestsRecovery: in.RequestsRecovery,
		Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, MaxRetries: in.MaxRetries,
		RetryBackoff: time.Duration(in.RetryBackoffMs) * time.Millisecond, AlarmTargets: in.AlarmTargets}, nil
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) error {
	var in jobIn
	if err := decode(r, &in); err != nil {
		return err
	}
	job, err := in.validate()
	if err != nil {
		return err
	}
	if err := s.checkAppQuota(r.Context(), job.App, 0); err != nil {
		return err
	}
	// Every trigger is checked before anything is written, so a bad one stores nothing.
	trigs := make([]sundial.Trigger, len(in.Triggers))
	seen := map[[2]string]int{}
	for i := range in.Triggers {
		prefix := fmt.Sprintf("triggers[%d]", i)
		if trigs[i], err = in.Triggers[i].validate(r.Context(), s.sched.Engine(), s.store, prefix, s.cfg.Input); err != nil {
			return err
		}
		if trigs[i].Name == "" {
			trigs[i].Name = fmt.Sprintf("%s#%d", job.Name, i+1)
		}
		key := [2]string{trigs[i].Group, trigs[i].Name}
		if j, dup := seen[key]; dup {
			return invalidField(prefix+".name", "trigger %q is also triggers[%d]", trigs[i].Name, j)
		}
		seen[key] = i
	}
	id, err := s.sched.ScheduleJob(r.Context(), job, trigs...)
	if err != nil {
		return fmt.Errorf("create job %q: %w", job.Name, err)
	}
	s.log.Info("job created", "job", id, "name", job.Name, "triggers", len(trigs), "by", principalFrom(r.Context()).user.Name)
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	if job.App == "" && !s.handlerKnown(job.Handler) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("no handler %q is registered on this server: its fires will fail "+
			"unless a node that registers it fires them (built in: noop)", job.Handler))
	}
	out.Warnings = append(out.Warnings, s.alarmWarnings(job.AlarmTargets)...)
	w.Header().Set("Location", "/api/v1/jobs/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) jobWithTriggers(r *http.Request, id int64) (jobOut, error) {
	j, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return jobOut{}, err
	}
	out := toJobOut(j)
	ts, err := s.store.TriggerList(r.Context(), store.TriggerFilter{JobID: id, Limit: maxPageSize})
	if err != nil {
		return jobOut{}, err
	}
	out.Triggers = make([]triggerOut, len(ts))
	for i, t := range ts {
		out.Triggers[i] = toTriggerOut(t)
	}
	return out, nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	after, err := queryID(r, "after")
	if err != nil {
		return err
	}
	js, err := s.store.JobList(r.Context(), store.JobFilter{Group: r.URL.Query().Get("group"), AfterID: after, Limit: limit + 1})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(js, limit, func(j *store.Job) string { return strconv.FormatInt(j.ID, 10) }, toJobOut))
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
	var in jobIn
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Triggers != nil {
		return invalidField("triggers", "a job's triggers are changed with POST /api/v1/jobs/{id}/triggers and DELETE /api/v1/triggers/{id}")
	}
	job, err := in.validate()
	if err != nil {
		return err
	}
	row, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return err
	}
	if job.App != row.App {
		if err := s.checkAppQuota(r.Context(), job.App, id); err != nil {
			return err
		}
	}
	row.Group, row.Name, row.Description, row.Handler, row.Params, row.Data = job.Group, job.Name, job.Description, job.Handler, job.Params, job.Data
	row.Concurrency, row.PersistData, row.RequestsRecovery = job.Concurrency, job.PersistData, job.RequestsRecovery
	row.App, row.Routing, row.TargetKind = job.App, job.Routing, store.TargetLocal
	if job.App != "" {
		row.TargetKind = store.TargetRemote
	}
	row.TimeoutMs, row.MaxRetries, row.RetryBackoffMs = in.TimeoutMs, in.MaxRetries, in.RetryBackoffMs
	row.AlarmTargets = job.AlarmTargets
	if err := s.store.JobUpdate(r.Context(), row); err != nil {
		return err
	}
	out, err := s.jobWithTriggers(r, id)
	if err != nil {
		return err
	}
	out.Warnings = append(out.Warnings, s.alarmWarnings(job.AlarmTargets)...)
	writeJSON(w, http.StatusOK, out)
	return nil
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
	if err := s.sched.DeleteJob(r.Context(), id); err != nil {
		return err
	}
	s.log.Info("job deleted", "job", id, "by", principalFrom(r.Context()).user.Name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pauseJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobAction(w, r, s.sched.PauseJob)
}

func (s *Server) resumeJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobAction(w, r, s.sched.ResumeJob)
}

// jobAction runs a pause or resume on an existing job and returns the job as it is after.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, id int64) error) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := s.store.JobGet(r.Context(), id); err != nil {
		return err
	}
	if err := act(r.Context(), id); err != nil {
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
	execID, err := s.sched.TriggerNow(r.Context(), id)
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
