package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
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
}

// executionsPage lists executions newest first, filtered by job, app, state, cause and
// fired-at range (which lists by fired time), a page at a time.
func (c *Console) executionsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.ExecutionFilter{Desc: true, Limit: executionsPageSize + 1, Scope: userFrom(r.Context()).readScope()}
	var err error
	if f.JobID, err = queryInt(q, "job"); err != nil {
		return err
	}
	if f.AfterID, err = queryInt(q, "after"); err != nil {
		return err
	}
	f.App = q.Get("app")
	if st := q.Get("state"); st != "" {
		if !contains(execStates, st) {
			return errBadRequest(fmt.Sprintf("state: want one of %s, got %q", strings.Join(execStates, ", "), st))
		}
		f.State = store.ExecutionState(st)
	}
	if cause := q.Get("cause"); cause != "" {
		if !contains(execCauses, cause) {
			return errBadRequest(fmt.Sprintf("cause: want one of %s, got %q", strings.Join(execCauses, ", "), cause))
		}
		f.Cause = store.ExecutionCause(cause)
	}
	for _, b := range []struct {
		name string
		dst  *int64
	}{{"from", &f.FiredFrom}, {"to", &f.FiredTo}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse("2006-01-02T15:04", v) // an <input type=datetime-local>, read as UTC
			if err != nil {
				return errBadRequest(fmt.Sprintf("%s: want a time like 2026-01-02T15:04, got %q", b.name, v))
			}
			*b.dst = t.UnixMilli()
		}
	}
	xs, err := c.store.ExecutionList(r.Context(), f)
	if err != nil {
		return err
	}
	ev := executionsView{Now: c.clock.Now().UnixMilli(), Filter: q, States: execStates, Causes: execCauses}
	apps, err := c.store.AppList(r.Context())
	if err != nil {
		return err
	}
	for _, a := range apps {
		ev.Apps = append(ev.Apps, a.Name)
	}
	if len(xs) > executionsPageSize {
		xs = xs[:executionsPageSize]
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
}

// executionDetail shows one execution: its messages, where it ran, the attempts of its fire
// and its output, which the page follows live over the API's SSE stream while it runs.
func (c *Console) executionDetail(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	ctx := r.Context()
	x, err := c.store.ExecutionGet(ctx, id)
	if err != nil {
		return err
	}
	xv := executionView{Now: c.clock.Now().UnixMilli(), execRow: execRow{Execution: x}}
	// A deleted job's executions are every reader's, as in the API: their app is unknown.
	switch j, err := c.readableJob(r, x.JobID); {
	case err == nil:
		xv.Job, xv.JobName = j, j.Group+"/"+j.Name
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if xv.Chain, err = c.attempts(r, x); err != nil {
		return err
	}
	if xv.Lines, err = c.store.ExecutionLogList(ctx, id, 0, 1000); err != nil {
		return err
	}
	if n := len(xv.Lines); n > 0 {
		xv.LastLine = xv.Lines[n-1].Line
	}
	return c.render(w, r, http.StatusOK, "execution", &view{Title: fmt.Sprintf("Execution %d", id), Nav: "executions",
		Data: xv, Flash: flashText(r.URL.Query().Get("done"))})
}

// attempts finds the executions of x's fire (same job, trigger, scheduled time and shard),
// whose attempts number them: retries link to each other through these.
func (c *Console) attempts(r *http.Request, x *store.Execution) ([]*store.Execution, error) {
	// Retries are newer executions of the job, earlier attempts older ones.
	newer, err := c.store.ExecutionList(r.Context(), store.ExecutionFilter{JobID: x.JobID, AfterID: x.ID, Limit: 200})
	if err != nil {
		return nil, err
	}
	var older []*store.Execution
	if x.Attempt > 0 {
		if older, err = c.store.ExecutionList(r.Context(), store.ExecutionFilter{JobID: x.JobID, AfterID: x.ID, Desc: true,
			Limit: 200}); err != nil {
			return nil, err
		}
	}
	// No column links a retry to the run it retries: a retry is the next attempt of the same
	// trigger and shard that comes after it (cause retry), so the chain is walked that way.
	var chain []*store.Execution
	cur := x
	for _, y := range older { // newest first
		if y.Attempt == cur.Attempt-1 && y.TriggerID == cur.TriggerID && y.ShardIndex == cur.ShardIndex {
			chain = append([]*store.Execution{y}, chain...)
			if cur = y; cur.Attempt == 0 {
				break
			}
		}
	}
	chain = append(chain, x)
	cur = x
	for _, y := range newer { // oldest first
		if y.Cause == store.CauseRetry && y.Attempt == cur.Attempt+1 && y.TriggerID == cur.TriggerID && y.ShardIndex == cur.ShardIndex {
			chain = append(chain, y)
			cur = y
		}
	}
	return chain, nil
}

func (c *Console) executionKill(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.call(r, http.MethodPost, fmt.Sprintf("/api/v1/executions/%d/kill", id), nil); err != nil {
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
	var x struct {
		ID int64 `json:"id"`
	}
	if err := c.callJSON(r, http.MethodPost, fmt.Sprintf("/api/v1/executions/%d/retry", id), nil, &x); err != nil {
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
}

// jobDetail shows a job: its settings, triggers with their next fires, recent executions and
// (drawn by the page from the API's report and the durations here) its success rate and
// durations over time.
func (c *Console) jobDetail(w http.ResponseWriter, r *http.Request) error {
	return c.showJob(w, r, http.StatusOK, Form{Values: url.Values{}, Errors: map[string]string{}})
}

func (c *Console) showJob(w http.ResponseWriter, r *http.Request, status int, run Form) error {
	ev, err := c.existing(r)
	if err != nil {
		return err
	}
	xs, err := c.store.ExecutionList(r.Context(), store.ExecutionFilter{JobID: ev.Job.ID, Desc: true, Limit: 50})
	if err != nil {
		return err
	}
	jv := jobDetailView{Now: c.clock.Now().UnixMilli(), Job: ev.Job, Triggers: ev.Triggers, Data: jsonString(ev.Job.Data),
		Script: sundial.IsScriptHandler(ev.Job.Handler), Run: run}
	name := map[int64]string{ev.Job.ID: ev.Job.Group + "/" + ev.Job.Name}
	jv.Recent = withNames(xs, name)
	if jv.Versions, err = c.store.ScriptVersionList(r.Context(), ev.Job.ID); err != nil {
		return err
	}
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
