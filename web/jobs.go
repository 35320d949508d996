package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// jobsPageSize is the rows of one page of the jobs list.
const jobsPageSize = 50

type jobRow struct {
	*store.Job
	Triggers []*store.Trigger
	// Last is the job's newest execution (its "last log"); nil if it never ran.
	Last *store.Execution
}

// Script reports whether the job's params are a script (its edit action says so).
func (j jobRow) Script() bool { return sundial.IsScriptHandler(j.Handler) }

// NextZone is the zone of the trigger that fires next, for showing its time in the job's zone.
func (j jobRow) NextZone() string {
	var next int64
	zone := ""
	for _, t := range j.Triggers {
		if t.State == store.TriggerWaiting && t.NextFireAt > 0 && (next == 0 || t.NextFireAt < next) {
			next, zone = t.NextFireAt, t.TimeZone
		}
	}
	return zone
}

// State is "paused" when every trigger is paused, "active" while one waits, else the
// state the triggers share ("complete", "error") or "no triggers".
func (j jobRow) State() string {
	if len(j.Triggers) == 0 {
		return "no triggers"
	}
	paused, other := 0, ""
	for _, t := range j.Triggers {
		switch t.State {
		case store.TriggerWaiting:
			return "active"
		case store.TriggerPaused:
			paused++
		default:
			other = string(t.State)
		}
	}
	if paused == len(j.Triggers) || other == "" {
		return "paused"
	}
	return other
}

// NextFire is the earliest next fire of the job's waiting triggers (0 for none).
func (j jobRow) NextFire() int64 {
	var next int64
	for _, t := range j.Triggers {
		if t.State == store.TriggerWaiting && t.NextFireAt > 0 && (next == 0 || t.NextFireAt < next) {
			next = t.NextFireAt
		}
	}
	return next
}

type jobsView struct {
	Filter url.Values
	Jobs   []jobRow
	// Next is the query of the following page; empty on the last.
	Next  string
	Apps  []string
	First bool
	// States are the state filter's choices (store.JobStates).
	States []string
}

func (c *Console) jobsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	in := server.JobQuery{Group: strings.TrimSpace(q.Get("group")), NameContains: strings.TrimSpace(q.Get("q")),
		App: strings.TrimSpace(q.Get("app")), Handler: strings.TrimSpace(q.Get("handler")), State: q.Get("state"),
		Limit: jobsPageSize, WithTriggers: true, WithLast: true}
	var err error
	if in.After, err = queryInt(q, "after"); err != nil {
		return err
	}
	page, err := c.ops().ListJobs.Execute(r.Context(), &in)
	if err != nil {
		return err
	}
	jv := jobsView{Filter: q, First: in.After == 0, States: store.JobStates}
	if page.More {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("after", strconv.FormatInt(page.Jobs[len(page.Jobs)-1].ID, 10))
		jv.Next = nq.Encode()
	}
	for _, j := range page.Jobs {
		jv.Jobs = append(jv.Jobs, jobRow{Job: j, Triggers: page.Triggers[j.ID], Last: page.Last[j.ID]})
	}
	if jv.Apps, err = c.appNames(r); err != nil {
		return err
	}
	v := &view{Title: "Jobs", Nav: "jobs", Data: jv, Flash: flashText(q.Get("done"))}
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Target") == "job-table" {
		v.User, v.CSRF = userFrom(r.Context()), csrfFrom(r.Context())
		return c.renderFragment(w, r, "jobs", "job-table", v)
	}
	return c.render(w, r, http.StatusOK, "jobs", v)
}

// fireTimes are a trigger's next fires, as the job list's "next fire times" shows them.
type fireTimes struct {
	Trigger *store.Trigger
	Fires   []int64
}

// jobFiresShown bounds the next fire times shown per trigger in the job list.
const jobFiresShown = 5

// jobFires is the job list's "next fire times" of one job, fetched when a row asks: the
// next fires of each of its waiting triggers. With ?after= (the job page's "Fires after")
// it is each trigger's times strictly after that instant whatever its state, as
// `sundial trigger next --after` lists them, to set beside Quartz's listing of the same trigger.
func (c *Console) jobFires(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	after, err := api.ParseTime("after", strings.TrimSpace(r.URL.Query().Get("after")))
	if err != nil {
		return errBadRequest(err.Error())
	}
	page, err := c.ops().ListJobTriggers.Execute(r.Context(), &server.JobTriggers{JobID: id, Limit: 100})
	if err != nil {
		return err
	}
	var out []fireTimes
	for _, t := range page.Triggers {
		if t.State != store.TriggerWaiting && after.IsZero() {
			continue
		}
		next, err := c.ops().TriggerNext.Execute(r.Context(), &server.TriggerNextQuery{ID: t.ID, N: jobFiresShown, After: after})
		if err != nil {
			return err
		}
		ft := fireTimes{Trigger: t}
		for _, f := range next.Fires {
			at, err := time.Parse(time.RFC3339Nano, f)
			if err != nil {
				return fmt.Errorf("web: trigger %d: fire time %q: %w", t.ID, f, err)
			}
			ft.Fires = append(ft.Fires, at.UnixMilli())
		}
		out = append(out, ft)
	}
	return c.renderFragment(w, r, "jobs", "job-fires", out)
}

// jobsBulk pauses or resumes the selected jobs, each as the API would.
func (c *Console) jobsBulk(w http.ResponseWriter, r *http.Request) error {
	action := r.PostFormValue("action")
	op := map[string]*server.Endpoint[server.JobRef, api.Job]{"pause": c.ops().PauseJob, "resume": c.ops().ResumeJob}[action]
	if op == nil {
		return errBadRequest(fmt.Sprintf("action: want pause or resume, got %q", action))
	}
	ids := r.PostForm["id"]
	for _, v := range ids {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errBadRequest(fmt.Sprintf("id: want a job id, got %q", v))
		}
		if _, err := op.Execute(r.Context(), &server.JobRef{ID: id}); err != nil {
			return err
		}
	}
	back := "/jobs?" + r.PostFormValue("query")
	back = setParam(back, "done", fmt.Sprintf("%sd-%d", action, len(ids)))
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// flashText is the notice of an action a redirect reports (?done=...).
func flashText(done string) string {
	// A code ends in the count or id it reports: "paused-3", "run-42".
	kind, n := done, ""
	if i := strings.LastIndexByte(done, '-'); i >= 0 && strings.Trim(done[i+1:], "0123456789") == "" {
		kind, n = done[:i], done[i+1:]
	}
	switch kind {
	case "paused":
		return "Paused " + n + " job(s)."
	case "resumed":
		return "Resumed " + n + " job(s)."
	case "deleted":
		return "Deleted job " + n + "."
	case "created":
		return "Job created."
	case "saved":
		return "Job saved."
	case "trigger":
		return "Trigger added."
	case "run":
		return "Started execution " + n + "."
	case "backfill":
		return "Started backfill " + n + "."
	case "backfill-canceled":
		return "Canceled backfill " + n + "."
	case "job-paused":
		return "Job paused."
	case "job-resumed":
		return "Job resumed."
	case "trigger-policy":
		return "Trigger policies saved."
	case "trigger-pause", "trigger-resume", "trigger-delete":
		return "Trigger " + strings.TrimPrefix(kind, "trigger-") + "d."
	case "calendar":
		return "Calendar saved."
	case "app-created":
		return "App created."
	case "app-saved":
		return "App saved."
	case "app-deleted":
		return "App deleted, and its executor credential revoked."
	case "credential-revoked":
		return "Executor credential revoked: its executors are refused from their next request."
	case "calendar-deleted":
		return "Calendar deleted."
	case "token-deleted":
		return "Token deleted."
	case "user-created":
		return "User created."
	case "user-saved":
		return "User saved."
	case "password-reset":
		return "Password set: sign in with the new one."
	case "killed":
		return "Kill sent."
	case "retried":
		return "Retry " + n + " queued."
	case "restored":
		return "Script restored as version " + n + "."
	case "wf-created":
		return "Workflow created."
	case "wf-saved":
		return "Workflow saved as version " + n + "."
	case "wf-retried":
		return "Retrying workflow run " + n + "."
	case "wf-node-retried":
		return "Retrying the node of workflow run " + n + "."
	case "wf-node-marked":
		return "Marked the node of workflow run " + n + " succeeded."
	case "wf-canceled":
		return "Canceled workflow run " + n + ": nodes not started yet never start."
	}
	return ""
}

func setParam(u, key, val string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set(key, val)
	p.RawQuery = q.Encode()
	return p.String()
}

func queryInt(q url.Values, name string) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errBadRequest(fmt.Sprintf("%s: want a non-negative integer, got %q", name, v))
	}
	return n, nil
}

func pathInt(r *http.Request, name string) (int64, error) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || n <= 0 {
		return 0, errNotFound(fmt.Sprintf("no such %s %q", name, r.PathValue(name)))
	}
	return n, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// jobAction runs a pause or resume and returns to the job's page.
func (c *Console) jobAction(w http.ResponseWriter, r *http.Request, op *server.Endpoint[server.JobRef, api.Job], done string) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	// A pause's note (the pause form's field) says why; a resume has none.
	if _, err := op.Execute(r.Context(), &server.JobRef{ID: id, Note: r.PostFormValue("note")}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=%s", id, done), http.StatusSeeOther)
	return nil
}

func (c *Console) jobPause(w http.ResponseWriter, r *http.Request) error {
	return c.jobAction(w, r, c.ops().PauseJob, "job-paused")
}

func (c *Console) jobResume(w http.ResponseWriter, r *http.Request) error {
	return c.jobAction(w, r, c.ops().ResumeJob, "job-resumed")
}

// jobRun fires the job now and opens the new execution.
func (c *Console) jobRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	// The dialog's parameters, or none (the job's own).
	x, err := c.ops().RunJob.Execute(r.Context(), &server.JobRun{ID: id, RunRequest: api.RunRequest{Params: r.PostFormValue("params")}})
	if form := (Form{Values: r.PostForm, Errors: map[string]string{}}); showAtField(err, form.Errors) {
		return c.showJob(w, r, http.StatusOK, form)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/executions/%d?done=run-%d", x.ID, x.ID), http.StatusSeeOther)
	return nil
}

func (c *Console) jobDelete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().DeleteJob.Execute(r.Context(), &server.JobDelete{ID: id}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs?done=deleted-%d", id), http.StatusSeeOther)
	return nil
}

// triggerAction pauses, resumes or deletes one trigger and returns to its job.
// triggerPolicy saves the policies of a stored trigger from the job page's form, through the
// op PATCH /triggers/{id} uses.
func (c *Console) triggerPolicy(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	v := func(name string) *string { s := strings.TrimSpace(r.PostFormValue(name)); return &s }
	p := api.TriggerPolicy{CatchUpWindow: v("catchup_window"), CatchUp: v("catchup"), DST: v("dst"), Misfire: v("misfire")}
	jitter := int64(0)
	if raw := *v("jitter_ms"); raw != "" {
		if jitter, err = strconv.ParseInt(raw, 10, 64); err != nil {
			return schedule.Fieldf("jitter_ms", "want a whole number, got %q", raw)
		}
	}
	p.JitterMs = &jitter
	t, err := c.ops().UpdateTrigger.Execute(r.Context(), &server.TriggerPolicyUpdate{ID: id, TriggerPolicy: p})
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=trigger-policy", t.JobID), http.StatusSeeOther)
	return nil
}

func (c *Console) triggerAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	a := r.PathValue("action")
	op := map[string]*server.Endpoint[server.TriggerRef, store.Trigger]{"pause": c.ops().PauseTrigger,
		"resume": c.ops().ResumeTrigger, "delete": c.ops().DeleteTrigger}[a]
	if op == nil {
		return errNotFound("no trigger action " + a)
	}
	t, err := op.Execute(r.Context(), &server.TriggerRef{ID: id})
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=trigger-%s", t.JobID, a), http.StatusSeeOther)
	return nil
}
