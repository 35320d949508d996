package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	targets := make([]string, len(j.AlarmTargets))
	for i, t := range j.AlarmTargets {
		targets[i] = alarm.MaskTarget(t) // a chat or paging target is sealed: its secret stays
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
		Handler: j.Handler, Params: params, ParamsSecret: j.ParamsSecret, Data: data, Concurrency: string(j.Concurrency), MaxConcurrent: j.MaxConcurrent, PersistData: j.PersistData,
		RequestsRecovery: j.RequestsRecovery, TimeoutMs: j.TimeoutMs, MaxRetries: j.MaxRetries,
		RetryBackoffMs: j.RetryBackoffMs, DispatchTimeoutMs: j.DispatchTimeoutMs, AlarmTargets: targets, ChildJobIDs: children,
		AlarmPolicy: api.AlarmPolicy{Threshold: j.AlarmPolicy.Threshold, WindowMs: j.AlarmPolicy.WindowMs,
			SilenceMs: j.AlarmPolicy.SilenceMs, Recovery: j.AlarmPolicy.Recovery}, Enabled: j.Enabled, CreatedAt: api.Time(j.CreatedAt), UpdatedAt: api.Time(j.UpdatedAt),
		PausedBy: j.PausedBy, PauseNote: j.PauseNote, PausedAt: pausedAt(j),
		PauseAfterFailures: j.PauseAfterFailures, ConsecutiveFailures: j.ConsecutiveFailures}
}

// pausedAt is when the job was paused with a note, nil when it was not.
func pausedAt(j *store.Job) *api.Time {
	if j.PausedAt == 0 {
		return nil
	}
	t := api.Time(j.PausedAt)
	return &t
}

// jobOf is the request's job for the scheduler, which checks it.
func jobOf(in *api.JobRequest) sundial.Job {
	var policy sundial.AlarmPolicy
	if p := in.AlarmPolicy; p != nil {
		policy = sundial.AlarmPolicyOf(store.AlarmPolicy{Threshold: p.Threshold, WindowMs: p.WindowMs, SilenceMs: p.SilenceMs, Recovery: p.Recovery})
	}
	return sundial.Job{AlarmPolicy: policy, Group: in.Group, Name: in.Name, Description: in.Description, Handler: in.Handler, App: in.App,
		Routing: in.Routing, Params: in.Params, ScriptNote: in.ScriptNote, Data: in.Data, Concurrency: sundial.Concurrency(in.Concurrency),
		MaxConcurrent: in.MaxConcurrent, PauseAfterFailures: in.PauseAfterFailures, PersistData: in.PersistData, RequestsRecovery: in.RequestsRecovery,
		Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, MaxRetries: in.MaxRetries,
		RetryBackoff: time.Duration(in.RetryBackoffMs) * time.Millisecond, AlarmTargets: in.AlarmTargets, ParamsSecret: in.ParamsSecret,
		DispatchTimeout: time.Duration(in.DispatchTimeoutMs) * time.Millisecond,
		ChildJobIDs:     in.ChildJobIDs}
}

// JobDelete deletes a job; Force deletes one whose runs are still going (they finish and
// keep their results and output).
type JobDelete struct {
	ID    int64 `json:"-"`
	Force bool  `json:"force"`
}

// JobRef names a job by its id.
type JobRef struct {
	ID int64 `json:"-"`
	// Note, on a pause, says why; the pause records it with who paused the job and when.
	Note string `json:"note,omitempty"`
}

// JobChange is a job's new settings (PUT /jobs/{id}).
type JobChange struct {
	ID int64 `json:"-"`
	api.JobRequest
}

// JobRun runs a job now, with the run's own params when they are given.
type JobRun struct {
	ID int64 `json:"-"`
	api.RunRequest
}

// JobQuery is a filter and page of the job list; Name (with Group) finds one job by its key.
type JobQuery struct {
	Group        string `json:"group"`
	Name         string `json:"name"`
	App          string `json:"app"`
	Handler      string `json:"handler"`
	NamePrefix   string `json:"name_prefix"`
	NameContains string `json:"name_contains"`
	State        string `json:"state"`
	// After is the last id of the page before; Limit the jobs of a page (default 100).
	After int64 `json:"after"`
	Limit int   `json:"limit"`
	// WithTriggers asks for each job's triggers (the console's list shows their states and
	// next fires).
	WithTriggers bool `json:"-"`
	// WithLast asks for each job's newest execution (the console's "last log").
	WithLast bool `json:"-"`
}

// JobPage is a page of jobs.
type JobPage struct {
	Jobs []*store.Job
	// Paused are the jobs that will not fire until someone resumes them.
	Paused map[int64]bool
	// Triggers are each job's triggers, when the query asked for them.
	Triggers map[int64][]*store.Trigger
	// Last is each job's newest execution, when the query asked for them; a job that never
	// ran has none.
	Last map[int64]*store.Execution
	// More says another page follows the last job.
	More bool
}

// JobNamesQuery asks for the names of jobs by id.
type JobNamesQuery struct {
	IDs []int64 `json:"-"`
}

// jobNames reads the group/name of the jobs ids the caller may read, in one query; a deleted
// job has none.
func (s *Server) jobNames(ctx context.Context, in *JobNamesQuery) (*map[int64]string, error) {
	ids := slices.Clone(in.IDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	js, err := s.store.JobsGet(ctx, ids)
	if err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	out := make(map[int64]string, len(js))
	for _, j := range js {
		if p.Can(ActRead, j.App) {
			out[j.ID] = j.Group + "/" + j.Name
		}
	}
	return &out, nil
}

// JobDetail is a job with its triggers.
type JobDetail struct {
	Job      *store.Job
	Triggers []*store.Trigger
	// Paused says it will not fire until someone resumes it (as store.JobFilter.Paused).
	Paused bool
}

// JobOut is a job with its triggers as the API shows it.
func JobOut(d *JobDetail) api.Job {
	out := toJobOut(d.Job)
	out.Triggers = make([]api.Trigger, len(d.Triggers))
	for i, t := range d.Triggers {
		out.Triggers[i] = toTriggerOut(t)
	}
	out.Paused = d.Paused
	return out
}

func (s *Server) createJob(ctx context.Context, in *api.JobRequest) (*api.Job, error) {
	job := jobOf(in)
	if err := s.checkAppQuota(ctx, job.App, 0); err != nil {
		return nil, err
	}
	trigs := make([]sundial.Trigger, len(in.Triggers))
	for i := range in.Triggers {
		var err error
		if trigs[i], err = triggerOf(&in.Triggers[i]); err != nil {
			return nil, nestField(err, fmt.Sprintf("triggers[%d]", i))
		}
	}
	// The scheduler checks the job and every trigger before its transaction commits, so a
	// bad one stores nothing.
	id, err := s.sched.ScheduleJob(s.auditedCtx(ctx, "job.create", "job", "", newJobSnapshot(job.Group, job.Name)), job, trigs...)
	if err != nil {
		for i := range in.Triggers {
			err = scheduleField(err, fmt.Sprintf("triggers[%d]", i), &in.Triggers[i].Schedule)
		}
		return nil, fmt.Errorf("create job %q: %w", job.Name, err)
	}
	s.log.Info("job created", "job", id, "name", job.Name, "triggers", len(trigs), "by", principalFrom(ctx).User.Name)
	out, err := jobWithTriggers(ctx, s.store, id)
	if err != nil {
		return nil, err
	}
	warn, err := s.jobWarnings(ctx, job)
	if err != nil {
		return nil, err
	}
	out.Warnings = append(out.Warnings, warn...)
	for i, t := range trigs {
		out.Warnings = append(out.Warnings, cronWarnings(fmt.Sprintf("triggers[%d].cron", i), t.Schedule)...)
	}
	return &out, nil
}

// jobWithTriggers reads a job and its triggers as the API shows them.
func jobWithTriggers(ctx context.Context, q store.Querier, id int64) (api.Job, error) {
	d, err := jobDetail(ctx, q, id)
	if err != nil {
		return api.Job{}, err
	}
	return JobOut(d), nil
}

// jobDetail reads a job and its triggers.
func jobDetail(ctx context.Context, q store.Querier, id int64) (*JobDetail, error) {
	j, err := q.JobGet(ctx, id)
	if err != nil {
		return nil, err
	}
	ts, err := q.TriggerList(ctx, store.TriggerFilter{JobID: id, Limit: maxPageSize})
	if err != nil {
		return nil, err
	}
	var paused, waiting bool
	for _, t := range ts {
		paused = paused || t.State == store.TriggerPaused
		waiting = waiting || t.State == store.TriggerWaiting
	}
	// As store.JobFilter.Paused: it will not fire until someone resumes it.
	return &JobDetail{Job: j, Triggers: ts, Paused: paused && !waiting}, nil
}

// checkLimit is a page's size: the default for 0, else 1 to maxPageSize.
func checkLimit(n int) (int, error) {
	switch {
	case n == 0:
		return defaultPageSize, nil
	case n < 1 || n > maxPageSize:
		return 0, invalidField("limit", "want an integer from 1 to %d, got %d", maxPageSize, n)
	}
	return n, nil
}

func (s *Server) listJobs(ctx context.Context, in *JobQuery) (*JobPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	page := &JobPage{Jobs: []*store.Job{}}
	var f store.JobFilter
	if in.Name != "" {
		// One job by its unique key, as a page of zero or one, so a lookup by name reads as
		// any other filtered list.
		group, name := api.SplitJobKey(in.Group, in.Name)
		j, err := s.store.JobGetByKey(ctx, group, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		case j.ID > in.After && p.Can(ActRead, j.App):
			page.Jobs = append(page.Jobs, j)
		}
		f = store.JobFilter{AfterID: in.After}
		if len(page.Jobs) > 0 {
			f.AfterID = page.Jobs[0].ID - 1
		}
	} else {
		if f, err = jobFilter(in); err != nil {
			return nil, err
		}
		f.AfterID, f.Limit, f.Scope = in.After, limit+1, p.ReadScope()
		js, err := s.store.JobList(ctx, f)
		if err != nil {
			return nil, err
		}
		page.Jobs, page.More = cut(js, limit)
	}
	if page.Paused, err = pausedOf(ctx, s.store, f, page.Jobs); err != nil {
		return nil, err
	}
	if in.WithTriggers {
		if page.Triggers, err = triggersOf(ctx, s.store, page.Jobs); err != nil {
			return nil, err
		}
	}
	if in.WithLast {
		if page.Last, err = lastOf(ctx, s.store, page.Jobs); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// lastOf reads the newest execution of each of the jobs: two statements for the page.
func lastOf(ctx context.Context, q store.Querier, jobs []*store.Job) (map[int64]*store.Execution, error) {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	latest, err := q.ExecutionsLatest(ctx, ids)
	if err != nil {
		return nil, err
	}
	xids := make([]int64, 0, len(latest))
	for _, x := range latest {
		xids = append(xids, x)
	}
	xs, err := q.ExecutionsGet(ctx, xids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*store.Execution, len(xs))
	for _, x := range xs {
		out[x.JobID] = x
	}
	return out, nil
}

// jobFilter reads the job list's filters: group, app, handler, name_prefix, name_contains,
// state.
func jobFilter(in *JobQuery) (store.JobFilter, error) {
	f := store.JobFilter{Group: in.Group, App: in.App, Handler: in.Handler, NamePrefix: in.NamePrefix, NameContains: in.NameContains}
	if st := in.State; st != "" && !f.WithState(st) {
		return f, invalidField("state", "want one of %s, got %q", strings.Join(store.JobStates, ", "), st)
	}
	return f, nil
}

// pausedOf finds the paused jobs of a page of jobs listed with f from after: the paused jobs
// among the first len(page)+1 after it are all the paused ones the page can hold, so one
// query answers for the page.
func pausedOf(ctx context.Context, q store.Querier, f store.JobFilter, page []*store.Job) (map[int64]bool, error) {
	paused := map[int64]bool{}
	if len(page) == 0 {
		return paused, nil
	}
	f.Paused, f.Limit = true, len(page)+1
	ps, err := q.JobList(ctx, f)
	if err != nil {
		return nil, err
	}
	for _, j := range ps {
		paused[j.ID] = true
	}
	return paused, nil
}

// triggersOf reads the triggers of a page of jobs in one statement (a page of them at a
// time, in case the jobs have many).
func triggersOf(ctx context.Context, q store.Querier, js []*store.Job) (map[int64][]*store.Trigger, error) {
	out := make(map[int64][]*store.Trigger, len(js))
	if len(js) == 0 {
		return out, nil
	}
	ids := make([]int64, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	f := store.TriggerFilter{JobIDs: ids, Limit: maxPageSize}
	for {
		ts, err := q.TriggerList(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out[t.JobID] = append(out[t.JobID], t)
		}
		if len(ts) < f.Limit {
			return out, nil
		}
		f.AfterID = ts[len(ts)-1].ID
	}
}

func (s *Server) getJob(ctx context.Context, in *JobRef) (*JobDetail, error) {
	return jobDetail(ctx, s.store, in.ID)
}

// updateJob replaces the job's settings; its triggers are managed under /triggers.
func (s *Server) updateJob(ctx context.Context, in *JobChange) (*api.Job, error) {
	id := in.ID
	if in.Triggers != nil {
		return nil, invalidField("triggers", "a job's triggers are changed with POST /api/v1/jobs/{id}/triggers and DELETE /api/v1/triggers/{id}")
	}
	job := jobOf(&in.JobRequest)
	row, err := s.store.JobGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if job.App != row.App {
		if err := s.checkAppQuota(ctx, job.App, id); err != nil {
			return nil, err
		}
	}
	if err := s.sched.UpdateJob(s.auditedCtx(ctx, "job.update", "job", strconv.FormatInt(id, 10), jobSnapshot(id)), id, job); err != nil {
		return nil, err
	}
	out, err := jobWithTriggers(ctx, s.store, id)
	if err != nil {
		return nil, err
	}
	warn, err := s.jobWarnings(ctx, job)
	if err != nil {
		return nil, err
	}
	out.Warnings = append(out.Warnings, warn...)
	return &out, nil
}

// jobWarnings are the warnings about a job its create and update answer with: alarm targets
// that cannot be reached, secret params that would travel in clear.
func (s *Server) jobWarnings(ctx context.Context, job sundial.Job) ([]string, error) {
	var warn []string
	for _, w := range s.handlerWarnings(job.Handler, job.App) {
		warn = append(warn, w.Message)
	}
	warn = append(warn, s.alarmWarnings(job.AlarmTargets)...)
	if !job.ParamsSecret {
		return warn, nil
	}
	clearText, err := s.clearSecrets(ctx, job.App)
	return append(warn, clearText...), err
}

// FieldWarning is a warning about a value that is accepted but will not work as meant, at
// the field that causes it (the console shows it there and asks before saving).
type FieldWarning struct {
	Field   string
	Message string
}

// JobCheck asks for the warnings a job's settings would get, without saving anything.
type JobCheck struct {
	api.JobRequest
}

// checkJob answers the warnings a create or update of the job would answer with, at their
// fields.
func (s *Server) checkJob(_ context.Context, in *JobCheck) (*[]FieldWarning, error) {
	job := jobOf(&in.JobRequest)
	out := s.handlerWarnings(job.Handler, job.App)
	return &out, nil
}

// handlerWarnings warns of a job that runs in this server's process (no app) with a handler
// this server has not registered: the job is accepted, as another node may register the
// handler, but this node's fires of it fail. A script handler (shell) runs on an app's
// executors only, so the warning sits at the app; any other at the handler's name.
func (s *Server) handlerWarnings(handler, app string) []FieldWarning {
	if app != "" || handler == "" || s.handlerKnown(handler) {
		return nil
	}
	if sundial.IsScriptHandler(handler) {
		return []FieldWarning{{Field: "app", Message: fmt.Sprintf("no handler %q is registered on this server: its fires will fail "+
			"unless a node that registers it fires them; a script handler runs on an app's executors: choose its app", handler)}}
	}
	return []FieldWarning{{Field: "handler", Message: fmt.Sprintf("no handler %q is registered on this server: its fires will fail "+
		"unless a node that registers it fires them (built in: noop)", handler)}}
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

func (s *Server) deleteJob(ctx context.Context, in *JobDelete) (*struct{}, error) {
	id := in.ID
	ctx = s.auditedCtx(ctx, "job.delete", "job", strconv.FormatInt(id, 10), jobSnapshot(id))
	if err := s.sched.DeleteJob(ctx, id, sundial.DeleteJobOpts{Force: in.Force}); err != nil {
		return nil, err
	}
	s.log.Info("job deleted", "job", id, "by", principalFrom(ctx).User.Name)
	return &struct{}{}, nil
}

func (s *Server) pauseJob(ctx context.Context, in *JobRef) (*api.Job, error) {
	by := actor(principalFrom(ctx))
	return s.jobAction(ctx, in.ID, "job.pause", func(ctx context.Context, id int64) error {
		return s.sched.PauseJobNoted(ctx, id, by, in.Note)
	})
}

func (s *Server) resumeJob(ctx context.Context, in *JobRef) (*api.Job, error) {
	return s.jobAction(ctx, in.ID, "job.resume", s.sched.ResumeJob)
}

// jobAction runs a pause or resume on an existing job and returns the job as it is after.
func (s *Server) jobAction(ctx context.Context, id int64, action string, act func(ctx context.Context, id int64) error) (*api.Job, error) {
	if _, err := s.store.JobGet(ctx, id); err != nil {
		return nil, err
	}
	if err := act(s.auditedCtx(ctx, action, "job", strconv.FormatInt(id, 10), jobSnapshot(id)), id); err != nil {
		return nil, err
	}
	out, err := jobWithTriggers(ctx, s.store, id)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// runJob fires the job once now, outside its triggers.
func (s *Server) runJob(ctx context.Context, in *JobRun) (*store.Execution, error) {
	// The job is the target; its state does not change, so the entry has no before/after.
	execID, err := s.sched.TriggerNowWith(s.auditedCtx(ctx, "job.run", "job", strconv.FormatInt(in.ID, 10), nil), in.ID, in.Params)
	if err != nil {
		return nil, err
	}
	return s.store.ExecutionGet(ctx, execID)
}

// The jobs' HTTP binding.

func readJobRef(r *http.Request, in *JobRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

// readJobPause is readJobRef with the pause's optional body ({"note": "..."}).
func readJobPause(r *http.Request, in *JobRef) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil || r.ContentLength == 0 {
		return err
	}
	return decodeJSON(r.Body, in)
}

func readJobDelete(r *http.Request, in *JobDelete) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	if v := r.URL.Query().Get("force"); v != "" {
		if in.Force, err = strconv.ParseBool(v); err != nil {
			return invalidField("force", "want true or false, got %q", v)
		}
	}
	return nil
}

func readJobChange(r *http.Request, in *JobChange) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	return decodeOp(r, &in.JobRequest)
}

func readJobRun(r *http.Request, in *JobRun) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	// The body is optional: without one the run gets the job's params.
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return invalidField("", "request body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return decodeJSON(bytes.NewReader(b), &in.RunRequest)
}

func readJobQuery(r *http.Request, in *JobQuery) (err error) {
	q := r.URL.Query()
	in.Group, in.Name, in.App, in.Handler = q.Get("group"), q.Get("name"), q.Get("app"), q.Get("handler")
	in.NamePrefix, in.NameContains, in.State = q.Get("name_prefix"), q.Get("name_contains"), q.Get("state")
	if in.Limit, err = pageLimit(r); err != nil {
		return err
	}
	in.After, err = queryID(r, "after")
	return err
}

func writeJobPage(w http.ResponseWriter, _ *http.Request, p *JobPage) error {
	out := pageOut(p.Jobs, p.More, func(j *store.Job) string { return strconv.FormatInt(j.ID, 10) }, toJobOut)
	for i := range out.Items {
		out.Items[i].Paused = p.Paused[out.Items[i].ID]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func writeJobCreated(w http.ResponseWriter, _ *http.Request, j *api.Job) error {
	w.Header().Set("Location", "/api/v1/jobs/"+strconv.FormatInt(j.ID, 10))
	writeJSON(w, http.StatusCreated, j)
	return nil
}

func writeRunStarted(w http.ResponseWriter, _ *http.Request, x *store.Execution) error {
	w.Header().Set("Location", "/api/v1/executions/"+strconv.FormatInt(x.ID, 10))
	writeJSON(w, http.StatusAccepted, toExecutionOut(x))
	return nil
}
