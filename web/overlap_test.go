package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestJobFormOverlap: the job form sets an at_most policy with its limit (stored, shown on
// the job page, back in the editor), and a limit out of range or without at_most is shown at
// the max_concurrent field with nothing stored.
func TestJobFormOverlap(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	cron := url.Values{"triggers[0].cron": {"0 0 * * * ?"}}
	with := func(kv ...string) url.Values {
		v := url.Values{}
		for k, x := range cron {
			v[k] = x
		}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		form url.Values
		msg  string
	}{
		{with("name", "zero", "concurrency", "at_most"), "want 1 to 1000"},
		{with("name", "many", "concurrency", "at_most", "max_concurrent", "1001"), "got 1001"},
		{with("name", "stray", "concurrency", "skip", "max_concurrent", "2"), "only concurrency at_most"},
	} {
		p := c.createJob(csrf, tc.form).mustStatus(t, http.StatusOK)
		i := strings.Index(p.body, `id="err-max_concurrent"`)
		if i < 0 {
			t.Fatalf("%v: no error at max_concurrent:\n%s", tc.form, p.body)
		}
		if slot := p.body[i:min(len(p.body), i+300)]; !strings.Contains(slot, tc.msg) {
			t.Fatalf("%v: error slot %q, want %q", tc.form, slot, tc.msg)
		}
	}
	id := jobIDFrom(t, c.createJob(csrf, with("name", "limited", "concurrency", "at_most", "max_concurrent", "4")))
	j, err := h.st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Concurrency != "at_most" || j.MaxConcurrent != 4 {
		t.Fatalf("stored %s %d, want at_most 4", j.Concurrency, j.MaxConcurrent)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "<dd>at_most 4</dd>")
	c.get(fmt.Sprintf("/jobs/%d/edit", id)).mustContain(t, `value="at_most" selected`, `name="max_concurrent"`, `value="4"`)
}

// TestTriggerFormRemainingRuns: the new-job form limits its trigger's runs (stored, shown
// with the job's triggers), and a negative count is shown at the trigger's field.
func TestTriggerFormRemainingRuns(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	p := c.createJob(csrf, url.Values{"name": {"neg"}, "triggers[0].cron": {"0 0 * * * ?"}, "triggers[0].remaining_runs": {"-1"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `id="err-triggers-0-remaining_runs" role="alert">`, "got -1")
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"five"}, "triggers[0].cron": {"0 0 * * * ?"}, "triggers[0].remaining_runs": {"5"}}))
	trs, err := h.st.TriggerList(context.Background(), store.TriggerFilter{JobID: id})
	if err != nil || len(trs) != 1 || trs[0].RunLimit != 5 {
		t.Fatalf("stored triggers %+v, %v; want one with 5 runs", trs, err)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "5 runs left")
}

// TestJobPauseNote: the job page's pause form takes a note; the page then shows who paused
// the job, when and why, and a resume clears it.
func TestJobPauseNote(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"noted"}, "triggers[0].cron": {"0 0 * * * ?"}}))
	c.post(fmt.Sprintf("/jobs/%d/pause", id), csrf, url.Values{"note": {"vendor API down <b>"}}).mustStatus(t, http.StatusSeeOther)
	j, err := h.st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.PauseNote != "vendor API down <b>" || j.PausedBy == "" || j.PausedAt == 0 {
		t.Fatalf("stored pause: by %q at %d note %q", j.PausedBy, j.PausedAt, j.PauseNote)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, `id="pause-notice"`, "Paused by "+j.PausedBy, "vendor API down &lt;b&gt;")
	c.post(fmt.Sprintf("/jobs/%d/resume", id), csrf, url.Values{}).mustStatus(t, http.StatusSeeOther)
	if p := c.get(fmt.Sprintf("/jobs/%d", id)); strings.Contains(p.body, `id="pause-notice"`) {
		t.Fatal("the pause note is still shown after a resume")
	}
}

// TestJobFormPauseAfterFailures: the job form sets pause on failure (stored, shown on the job
// page), and a count out of range is shown at its field.
func TestJobFormPauseAfterFailures(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	p := c.createJob(csrf, url.Values{"name": {"bad"}, "triggers[0].cron": {"0 0 * * * ?"}, "pause_after_failures": {"1001"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `id="err-pause_after_failures" role="alert">`, "got 1001")
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"guarded"}, "triggers[0].cron": {"0 0 * * * ?"}, "pause_after_failures": {"3"}}))
	j, err := h.st.JobGet(context.Background(), id)
	if err != nil || j.PauseAfterFailures != 3 {
		t.Fatalf("stored %+v, %v; want pause after 3 failures", j, err)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "<dd>3 (0 in a row now)</dd>")
}
