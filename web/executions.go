package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

const executionsPageSize = 50

var (
	execStates = store.Words(store.ExecutionStates)
	execCauses = store.Words(store.ExecutionCauses)
)

type executionsView struct {
	Now    int64
	Filter url.Values
	Rows   []execRow
	Next   string
	States []string
	Causes []string
	Apps   []string
	// JobError says why the job filter was not taken.
	JobError string
}

// executionFilters are the executions page's query parameters.
var executionFilters = []string{"job", "job_id", "app", "state", "cause", "from", "to", "after"}

// jobFilter reads the executions' job filter: a job id, a job's name, or group/name. A name
// no job has, or that several have, is refused (400) saying so.
func (c *Console) jobFilter(r *http.Request, v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if id, err := strconv.ParseInt(v, 10, 64); err == nil {
		if id <= 0 {
			return 0, errBadRequest(fmt.Sprintf("job: want a job id, name or group/name, got %q", v))
		}
		return id, nil
	}
	// The API's job key first (a name is the default group's; group/name), then the name in
	// any group.
	p, err := c.ops().ListJobs.Execute(r.Context(), &server.JobQuery{Name: v, Limit: 1})
	if err != nil {
		return 0, err
	}
	if len(p.Jobs) == 1 {
		return p.Jobs[0].ID, nil
	}
	var jobs []*store.Job
	if !strings.Contains(v, "/") {
		p, err := c.ops().ListJobs.Execute(r.Context(), &server.JobQuery{NamePrefix: v, Limit: 1000})
		if err != nil {
			return 0, err
		}
		for _, j := range p.Jobs {
			if j.Name == v {
				jobs = append(jobs, j)
			}
		}
	}
	switch len(jobs) {
	case 0:
		return 0, errBadRequest(fmt.Sprintf("job: no job is named %q (give its id, name or group/name)", v))
	case 1:
		return jobs[0].ID, nil
	}
	var groups []string
	for _, j := range jobs {
		groups = append(groups, j.Group)
	}
	return 0, errBadRequest(fmt.Sprintf("job: %d jobs are named %q, in groups %s: give group/name or the id",
		len(jobs), v, strings.Join(groups, ", ")))
}

// executionsPage lists executions newest first, filtered by job, app, state, cause and
// fired-at range (which lists by fired time), a page at a time.
func (c *Console) executionsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(executionFilters, k) {
			return errBadRequest(fmt.Sprintf("%s: no such filter; the executions take %s", k, strings.Join(executionFilters, ", ")))
		}
	}
	// job_id is the API's name of the job filter.
	if v := q.Get("job_id"); v != "" && q.Get("job") == "" {
		q.Set("job", v)
	}
	q.Del("job_id")
	in := server.ExecutionQuery{App: q.Get("app"), State: q.Get("state"), Cause: q.Get("cause"), Limit: executionsPageSize}
	ev := executionsView{Now: c.clock.Now().UnixMilli(), Filter: q, States: execStates, Causes: execCauses}
	var err error
	if ev.Apps, err = c.appNames(r); err != nil {
		return err
	}
	if in.JobID, err = c.jobFilter(r, q.Get("job")); err != nil {
		ae, _ := server.ErrorOf(err)
		if ae.Status != http.StatusBadRequest {
			return err
		}
		// Said at the filter, with no runs listed: a filter that cannot be read is not dropped.
		ev.JobError = ae.Message
		return c.render(w, r, http.StatusBadRequest, "executions", &view{Title: "Executions", Nav: "executions", Data: ev})
	}
	if in.After, err = queryInt(q, "after"); err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"from", &in.From}, {"to", &in.To}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse("2006-01-02T15:04", v) // an <input type=datetime-local>, read as UTC
			if err != nil {
				return errBadRequest(fmt.Sprintf("%s: want a time like 2026-01-02T15:04, got %q", b.name, v))
			}
			*b.dst = t
		}
	}
	page, err := c.ops().ListExecutions.Execute(r.Context(), &in)
	if err != nil {
		return err
	}
	xs := page.Executions
	if page.More {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("after", strconv.FormatInt(xs[len(xs)-1].ID, 10))
		ev.Next = nq.Encode()
	}
	names, err := c.jobNames(r, jobIDs(xs))
	if err != nil {
		return err
	}
	ev.Rows = withNames(xs, names)
	return c.render(w, r, http.StatusOK, "executions", &view{Title: "Executions", Nav: "executions", Data: ev})
}

type executionView struct {
	Now int64
	execRow
	Job *store.Job
	// Chain is the attempt chain: the first run and its retries, in order.
	Chain []*store.Execution
	Lines []store.LogLine
	// LastLine is where the live tail continues.
	LastLine int64
	// Subtasks is a page of the run's map/reduce sub-tasks (after ?subtasks_after=) with the
	// counts of all of them by state; no counts for a run that mapped nothing.
	Subtasks     *server.SubtaskPage
	SubtaskNext  int64
	SubtaskState []string
}

// executionDetail shows one execution: its messages, where it ran, the attempts of its fire
// and its output, which the page follows live over the API's SSE stream while it runs.
func (c *Console) executionDetail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	ctx := r.Context()
	x, err := c.ops().GetExecution.Execute(ctx, &server.ExecutionRef{ID: id})
	if err != nil {
		return err
	}
	xv := executionView{Now: c.clock.Now().UnixMilli(), execRow: execRow{Execution: x}}
	// A deleted job's executions are every reader's, as in the API: their app is unknown.
	switch d, err := c.ops().GetJob.Execute(ctx, &server.JobRef{ID: x.JobID}); {
	case err == nil:
		xv.Job, xv.JobName = d.Job, d.Job.Group+"/"+d.Job.Name
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	chain, err := c.ops().ExecutionAttempts.Execute(ctx, &server.ExecutionRef{ID: id})
	if err != nil {
		return err
	}
	xv.Chain = *chain
	out, err := c.ops().ExecutionOutput.Execute(ctx, &server.OutputQuery{ID: id, Limit: 1000})
	if err != nil {
		return err
	}
	xv.Lines = out.Lines
	if n := len(xv.Lines); n > 0 {
		xv.LastLine = xv.Lines[n-1].Line
	}
	after, err := queryInt(r.URL.Query(), "subtasks_after")
	if err != nil {
		return err
	}
	if xv.Subtasks, err = c.ops().ListSubtasks.Execute(ctx, &server.SubtaskQuery{ID: id, After: after, Limit: 50}); err != nil {
		return err
	}
	if st := xv.Subtasks.Subtasks; xv.Subtasks.More && len(st) > 0 {
		xv.SubtaskNext = st[len(st)-1].ID
	}
	xv.SubtaskState = store.SubtaskStates
	return c.render(w, r, http.StatusOK, "execution", &view{Title: fmt.Sprintf("Execution %d", id), Nav: "executions",
		Data: xv, Flash: flashText(r.URL.Query().Get("done"))})
}

func (c *Console) executionKill(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().KillExecution.Execute(r.Context(), &server.ExecutionRef{ID: id}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/executions/%d?done=killed", id), http.StatusSeeOther)
	return nil
}

func (c *Console) executionRetry(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	x, err := c.ops().RetryExecution.Execute(r.Context(), &server.ExecutionRef{ID: id})
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/executions/%d?done=retried-%d", x.ID, x.ID), http.StatusSeeOther)
	return nil
}

type jobDetailView struct {
	Now      int64
	Job      *store.Job
	Triggers []*store.Trigger
	Recent   []execRow
	// Durations is the recent runs' durations for the chart, oldest first.
	Durations string
	Data      string
	// Versions is a script job's kept script history, newest first.
	Versions []*store.ScriptVersion
	// Script tells whether the job runs a script, which takes no run-now parameters.
	Script bool
	// Run is the run-now dialog's form; it opens with its error when a run was refused.
	Run Form
	// CanPause and CanResume offer the actions that would change something: a job whose
	// triggers have all completed has nothing to pause or resume.
	CanPause, CanResume bool
	// Backfills are the job's backfills, newest first; Backfill is the backfill dialog's form
	// and Plan a dry run's answer, shown in it.
	Backfills []api.Backfill
	Backfill  Form
	Plan      *api.Backfill
}

// jobDetail shows a job: its settings, triggers with their next fires, recent executions and
// (drawn by the page from the API's report and the durations here) its success rate and
// durations over time.
func (c *Console) jobDetail(w http.ResponseWriter, r *http.Request) error {
	return c.showJob(w, r, http.StatusOK, Form{Values: url.Values{}, Errors: map[string]string{}})
}

func (c *Console) showJob(w http.ResponseWriter, r *http.Request, status int, run Form) error {
	return c.showJobWith(w, r, status, run, Form{Values: url.Values{}, Errors: map[string]string{}}, nil)
}

// showJobWith is showJob with the backfill dialog's form and a dry run's plan.
func (c *Console) showJobWith(w http.ResponseWriter, r *http.Request, status int, run, backfill Form, plan *api.Backfill) error {
	ev, err := c.existing(r)
	if err != nil {
		return err
	}
	recent, err := c.ops().ListExecutions.Execute(r.Context(), &server.ExecutionQuery{JobID: ev.Job.ID, Limit: 50})
	if err != nil {
		return err
	}
	xs := recent.Executions
	jv := jobDetailView{Now: c.clock.Now().UnixMilli(), Job: ev.Job, Triggers: ev.Triggers, Data: jsonString(ev.Job.Data),
		Script: sundial.IsScriptHandler(ev.Job.Handler), Run: run, Backfill: backfill, Plan: plan}
	for _, t := range ev.Triggers {
		switch t.State {
		case store.TriggerWaiting, store.TriggerError:
			jv.CanPause = true
		case store.TriggerPaused:
			jv.CanResume = true
		}
	}
	bs, err := c.ops().ListBackfills.Execute(r.Context(), &server.JobRef{ID: ev.Job.ID})
	if err != nil {
		return err
	}
	jv.Backfills = *bs
	name := map[int64]string{ev.Job.ID: ev.Job.Group + "/" + ev.Job.Name}
	jv.Recent = withNames(xs, name)
	versions, err := c.ops().ListScriptVersions.Execute(r.Context(), &server.JobRef{ID: ev.Job.ID})
	if err != nil {
		return err
	}
	jv.Versions = *versions
	type point struct {
		At int64 `json:"t"`
		Ms int64 `json:"ms"`
		OK bool  `json:"ok"`
	}
	pts := []point{}
	for i := len(xs) - 1; i >= 0; i-- {
		x := xs[i]
		if x.State.Terminal() && x.StartedAt > 0 && x.FinishedAt > 0 {
			pts = append(pts, point{x.FinishedAt, x.FinishedAt - x.StartedAt, x.State == store.ExecSucceeded})
		}
	}
	b, _ := json.Marshal(pts) // plain numbers
	jv.Durations = string(b)
	if len(jv.Recent) > 20 {
		jv.Recent = jv.Recent[:20]
	}
	return c.render(w, r, status, "job", &view{Title: ev.Job.Name, Nav: "jobs", Data: jv,
		Flash: flashText(r.URL.Query().Get("done"))})
}
