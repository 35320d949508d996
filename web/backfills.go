package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
)

// backfillCreate plans (the dry-run button) or starts a backfill of the job from the job
// page's dialog; a refused one, and a plan, reopen the dialog.
func (c *Console) backfillCreate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	req, form, err := backfillForm(r)
	if err != nil {
		return err
	}
	if len(form.Errors) > 0 {
		return c.showJobWith(w, r, http.StatusOK, Form{}, form, nil)
	}
	b, err := c.ops().CreateBackfill.Execute(r.Context(), &server.BackfillAdd{JobID: id, BackfillRequest: req})
	if showAtField(err, form.Errors) {
		return c.showJobWith(w, r, http.StatusOK, Form{}, form, nil)
	}
	if err != nil {
		return err
	}
	if req.DryRun {
		return c.showJobWith(w, r, http.StatusOK, Form{}, form, b)
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=backfill-%d#backfills", id, b.ID), http.StatusSeeOther)
	return nil
}

// backfillForm reads a backfill dialog's form; a value that is no number is an error at its
// field (the operation checks the rest).
func backfillForm(r *http.Request) (api.BackfillRequest, Form, error) {
	if err := r.ParseForm(); err != nil {
		return api.BackfillRequest{}, Form{}, err
	}
	form := Form{Values: r.PostForm, Errors: map[string]string{}}
	req := api.BackfillRequest{From: strings.TrimSpace(r.PostFormValue("from")), To: strings.TrimSpace(r.PostFormValue("to")),
		DryRun: r.PostFormValue("dry_run") == "true"}
	var err error
	for _, f := range []struct {
		name string
		to   *int
	}{{"max_concurrent", &req.MaxConcurrent}, {"chunk", &req.Chunk}} {
		if v := strings.TrimSpace(r.PostFormValue(f.name)); v != "" {
			if *f.to, err = strconv.Atoi(v); err != nil {
				form.Errors[f.name] = fmt.Sprintf("want a whole number, got %q", v)
			}
		}
	}
	if v := strings.TrimSpace(r.PostFormValue("trigger")); v != "" {
		if req.Trigger, err = strconv.ParseInt(v, 10, 64); err != nil {
			form.Errors["trigger"] = fmt.Sprintf("want a trigger id, got %q", v)
		}
	}
	return req, form, nil
}

// workflowBackfill plans or starts a backfill of a workflow from its page's dialog, as
// backfillCreate does a job's.
func (c *Console) workflowBackfill(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	req, form, err := backfillForm(r)
	if err != nil {
		return err
	}
	if len(form.Errors) > 0 {
		return c.showWorkflowWith(w, r, http.StatusOK, workflowForms{Backfill: form})
	}
	b, err := c.ops().BackfillWorkflow.Execute(r.Context(), &server.WorkflowBackfillAdd{Name: name, BackfillRequest: req})
	if showAtField(err, form.Errors) {
		return c.showWorkflowWith(w, r, http.StatusOK, workflowForms{Backfill: form})
	}
	if err != nil {
		return err
	}
	if req.DryRun {
		return c.showWorkflowWith(w, r, http.StatusOK, workflowForms{Backfill: form, Plan: b})
	}
	http.Redirect(w, r, "/workflows/"+url.PathEscape(name)+fmt.Sprintf("?done=backfill-%d#backfills", b.ID), http.StatusSeeOther)
	return nil
}

// backfillCancel cancels a backfill and returns to its job.
func (c *Console) backfillCancel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	b, err := c.ops().CancelBackfill.Execute(r.Context(), &server.BackfillRef{ID: id})
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=backfill-canceled-%d#backfills", b.JobID, b.ID), http.StatusSeeOther)
	return nil
}
