package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// editorView is the job editor: a new job with its first trigger, or an existing job's
// settings with its triggers and a form to add one.
type editorView struct {
	Form
	Job       *store.Job // nil for a new job
	Triggers  []*store.Trigger
	Add       Form // the add-trigger form of an existing job
	Calendars []string
	Apps      []string
	Zones     []string
	// Warnings are the service's warnings at their fields (a job that can never run); the
	// form is saved only once the user confirms it (accept_warnings).
	Warnings map[string]string
	// ScriptHandlers are the handlers whose params the script editor edits.
	ScriptHandlers string
}

// W is the warning shown at path.
func (ev *editorView) W(path string) string { return ev.Warnings[path] }

// Script reports whether the form's handler runs its params as a script.
func (ev *editorView) Script() bool { return sundial.IsScriptHandler(ev.V("handler")) }

// warned fills ev.Warnings with what saving the job would be warned of, and reports whether
// the form must be shown again to have the user confirm (they have not yet).
func (c *Console) warned(r *http.Request, ev *editorView, in *api.JobRequest) (bool, error) {
	ws, err := c.ops().CheckJob.Execute(r.Context(), &server.JobCheck{JobRequest: *in})
	if err != nil {
		return false, err
	}
	if len(*ws) == 0 {
		return false, nil
	}
	ev.Warnings = map[string]string{}
	for _, w := range *ws {
		ev.Warnings[w.Field] = w.Message
	}
	return r.PostForm.Get("accept_warnings") != "true", nil
}

// zones are the zone picker's suggestions; any IANA name may be typed.
var zones = []string{"UTC", "Europe/London", "Europe/Dublin", "Europe/Lisbon", "Europe/Paris", "Europe/Berlin",
	"Europe/Madrid", "Europe/Rome", "Europe/Amsterdam", "Europe/Zurich", "Europe/Stockholm", "Europe/Warsaw",
	"Europe/Athens", "Europe/Helsinki", "Europe/Istanbul", "Europe/Moscow", "Africa/Cairo", "Africa/Johannesburg",
	"Africa/Lagos", "Asia/Dubai", "Asia/Karachi", "Asia/Kolkata", "Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta",
	"Asia/Shanghai", "Asia/Hong_Kong", "Asia/Singapore", "Asia/Taipei", "Asia/Seoul", "Asia/Tokyo",
	"Australia/Perth", "Australia/Adelaide", "Australia/Sydney", "Pacific/Auckland", "Pacific/Honolulu",
	"America/Anchorage", "America/Los_Angeles", "America/Denver", "America/Phoenix", "America/Chicago",
	"America/Mexico_City", "America/New_York", "America/Toronto", "America/Bogota", "America/Lima",
	"America/Santiago", "America/Sao_Paulo", "America/Argentina/Buenos_Aires"}

// newTriggerPrefix is where the new-job form's trigger fields sit: the API's path of the
// first trigger, so its errors land at them.
const newTriggerPrefix = "triggers[0]."

func (c *Console) editor(r *http.Request, ev *editorView) (*editorView, error) {
	cals, err := c.calendars(r)
	if err != nil {
		return nil, err
	}
	for _, cal := range cals {
		ev.Calendars = append(ev.Calendars, cal.Name)
	}
	if ev.Apps, err = c.appNames(r); err != nil {
		return nil, err
	}
	ev.Zones = zones
	ev.ScriptHandlers = strings.Join(sundial.ScriptHandlers(), " ")
	if ev.Errors == nil {
		ev.Errors = map[string]string{}
	}
	if ev.Add.Errors == nil {
		ev.Add.Errors = map[string]string{}
	}
	if ev.Add.Values == nil {
		ev.Add.Values = url.Values{"time_zone": {"UTC"}}
	}
	return ev, nil
}

// showEditor renders the editor. A form with errors is answered 200 like any page: the
// browser logs a page that loads with 4xx as an error, and the errors are on the page.
func (c *Console) showEditor(w http.ResponseWriter, r *http.Request, status int, ev *editorView, flash string) error {
	ev, err := c.editor(r, ev)
	if err != nil {
		return err
	}
	title := "New job"
	if ev.Job != nil {
		title = "Edit " + ev.Job.Name
	}
	return c.render(w, r, status, "editor", &view{Title: title, Nav: "jobs", Data: ev, Flash: flash})
}

func (c *Console) jobNew(w http.ResponseWriter, r *http.Request) error {
	vals := url.Values{"group": {"default"}, "handler": {"noop"}, "concurrency": {"allow"},
		newTriggerPrefix + "kind": {"cron"}, newTriggerPrefix + "time_zone": {"UTC"},
		newTriggerPrefix + "cron": {"0 0/5 * * * ?"}}
	return c.showEditor(w, r, http.StatusOK, &editorView{Form: Form{Values: vals, Prefix: newTriggerPrefix}}, "")
}

// jobCopy opens the new-job form filled with a job's settings and its first trigger.
func (c *Console) jobCopy(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	job, err := c.jobJSON(r, id)
	if err != nil {
		return err
	}
	vals := url.Values{}
	trigs, _ := job["triggers"].([]any)
	delete(job, "triggers")
	flatten("", job, vals)
	vals.Set("name", "copy of "+vals.Get("name"))
	if len(trigs) > 0 {
		if t, ok := trigs[0].(map[string]any); ok {
			delete(t, "name") // a trigger's name is unique: the copy gets the default
			flatten(newTriggerPrefix, t, vals)
		}
	}
	vals.Set(newTriggerPrefix+"kind", triggerKindOf(vals, newTriggerPrefix))
	return c.showEditor(w, r, http.StatusOK, &editorView{Form: Form{Values: vals, Prefix: newTriggerPrefix}}, "")
}

// jobCreate sends the form to POST /api/v1/jobs; an error the API names a field for is shown
// at it, and nothing is stored.
func (c *Console) jobCreate(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return errBadRequest(err.Error())
	}
	ev := &editorView{Form: Form{Values: r.PostForm, Errors: map[string]string{}, Prefix: newTriggerPrefix}}
	body, err := jobJSON(r.PostForm)
	if err == nil {
		var tj map[string]any
		if tj, err = triggerJSON(r.PostForm, newTriggerPrefix); err == nil {
			body["triggers"] = []any{tj}
		}
	}
	var in *api.JobRequest
	if err == nil {
		in, err = request[api.JobRequest](body)
	}
	var job *api.Job
	if err == nil {
		var ask bool
		if ask, err = c.warned(r, ev, in); err == nil && ask {
			return c.showEditor(w, r, http.StatusOK, ev, "")
		}
	}
	if err == nil {
		job, err = c.ops().CreateJob.Execute(r.Context(), in)
	}
	if showAtField(err, ev.Errors) {
		return c.showEditor(w, r, http.StatusOK, ev, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=created", job.ID), http.StatusSeeOther)
	return nil
}

// showAtField records a form error, or an operation's error that names a field (as the API
// answers it: 400, 409 or 422, or a 403 naming a field), in errs; it reports false for other errors.
func showAtField(err error, errs map[string]string) bool {
	if err == nil {
		return false
	}
	var fe *formError
	if errors.As(err, &fe) {
		errs[fe.field] = fe.msg
		return true
	}
	ae, _ := server.ErrorOf(err)
	switch {
	case ae.Status == http.StatusBadRequest, ae.Status == http.StatusConflict, ae.Status == http.StatusUnprocessableEntity,
		ae.Status == http.StatusForbidden && ae.Field != "": // a value the user may not name (a child job)
		field := fieldPath(ae.Field)
		if field == "" && ae.Code == "already_exists" {
			field = "name" // a job's group and name are taken
		}
		errs[field] = ae.Message
		return true
	}
	return false
}

// request reads a form's JSON (the API's form of the request) into an operation's request,
// as the API reads a body: a value of the wrong type is an error at its field.
func request[T any](body map[string]any) (*T, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("web: encode a form: %w", err)
	}
	var in T
	if err := server.DecodeJSON(b, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// existing reads a job and its triggers for the edit form.
func (c *Console) existing(r *http.Request) (*editorView, error) {
	id, err := pathInt(r, "id")
	if err != nil {
		return nil, err
	}
	d, err := c.ops().GetJob.Execute(r.Context(), &server.JobRef{ID: id})
	if err != nil {
		return nil, err
	}
	return &editorView{Job: d.Job, Triggers: d.Triggers}, nil
}

// jobJSON reads a job with its triggers in the API's JSON form, the form's own.
func (c *Console) jobJSON(r *http.Request, id int64) (map[string]any, error) {
	d, err := c.ops().GetJob.Execute(r.Context(), &server.JobRef{ID: id})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(server.JobOut(d))
	if err != nil {
		return nil, fmt.Errorf("web: encode job %d: %w", id, err)
	}
	var job map[string]any
	if err := json.Unmarshal(b, &job); err != nil {
		return nil, fmt.Errorf("web: decode job %d: %w", id, err)
	}
	return job, nil
}

// jobValues reads a job's settings from the API as form values (its own form of them).
func (c *Console) jobValues(r *http.Request, id int64) (url.Values, error) {
	job, err := c.jobJSON(r, id)
	if err != nil {
		return nil, err
	}
	delete(job, "triggers")
	vals := url.Values{}
	flatten("", job, vals)
	return vals, nil
}

func (c *Console) jobEdit(w http.ResponseWriter, r *http.Request) error {
	ev, err := c.existing(r)
	if err != nil {
		return err
	}
	if ev.Values, err = c.jobValues(r, ev.Job.ID); err != nil {
		return err
	}
	return c.showEditor(w, r, http.StatusOK, ev, flashText(r.URL.Query().Get("done")))
}

// jobUpdate sends the settings to PUT /api/v1/jobs/{id}.
func (c *Console) jobUpdate(w http.ResponseWriter, r *http.Request) error {
	ev, err := c.existing(r)
	if err != nil {
		return err
	}
	ev.Values, ev.Errors = r.PostForm, map[string]string{}
	body, err := jobJSON(r.PostForm)
	var in *api.JobRequest
	if err == nil {
		in, err = request[api.JobRequest](body)
	}
	if err == nil {
		var ask bool
		if ask, err = c.warned(r, ev, in); err == nil && ask {
			return c.showEditor(w, r, http.StatusOK, ev, "")
		}
	}
	if err == nil {
		_, err = c.ops().UpdateJob.Execute(r.Context(), &server.JobChange{ID: ev.Job.ID, JobRequest: *in})
	}
	if showAtField(err, ev.Errors) {
		return c.showEditor(w, r, http.StatusOK, ev, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=saved", ev.Job.ID), http.StatusSeeOther)
	return nil
}

// triggerAdd sends the add-trigger form to POST /api/v1/jobs/{id}/triggers.
func (c *Console) triggerAdd(w http.ResponseWriter, r *http.Request) error {
	ev, err := c.existing(r)
	if err != nil {
		return err
	}
	if ev.Values, err = c.jobValues(r, ev.Job.ID); err != nil {
		return err
	}
	ev.Add = Form{Values: r.PostForm, Errors: map[string]string{}}
	body, err := triggerJSON(r.PostForm, "")
	var in *api.TriggerRequest
	if err == nil {
		in, err = request[api.TriggerRequest](body)
	}
	if err == nil {
		_, err = c.ops().AddTrigger.Execute(r.Context(), &server.TriggerAdd{JobID: ev.Job.ID, TriggerRequest: *in})
	}
	if showAtField(err, ev.Add.Errors) {
		return c.showEditor(w, r, http.StatusOK, ev, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d/edit?done=trigger", ev.Job.ID), http.StatusSeeOther)
	return nil
}

// jsonString shows a value as JSON in a page (the job's data).
func jsonString(v map[string]any) string {
	if len(v) == 0 {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}
