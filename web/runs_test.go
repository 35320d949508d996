package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// An operator edits a script job's script in the console, runs it, edits it again and runs it
// again: each execution's page names the script version it ran, linked to that version, and
// the handler was given that version's script.
func TestExecutionShowsItsScriptVersion(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "rotate", Handler: "shell", Params: "echo one\n",
		ScriptNote: "imported"})
	if err != nil {
		t.Fatal(err)
	}
	editAndRun := func(script, note string) int64 {
		t.Helper()
		c.post(fmt.Sprintf("/jobs/%d/edit", id), csrf, url.Values{"group": {"default"}, "name": {"rotate"},
			"handler": {"shell"}, "concurrency": {"allow"}, "params": {script}, "script_note": {note}}).mustStatus(t, http.StatusSeeOther)
		run := c.post(fmt.Sprintf("/jobs/%d/run", id), csrf, nil).mustStatus(t, http.StatusSeeOther)
		var execID int64
		if _, err := fmt.Sscanf(run.header.Get("Location"), "/executions/%d", &execID); err != nil {
			t.Fatalf("run now went to %q", run.header.Get("Location"))
		}
		got := <-h.ran
		if got.execution != execID || got.params != script {
			t.Fatalf("the handler ran execution %d with %q, want %d with %q", got.execution, got.params, execID, script)
		}
		return execID
	}
	first := editAndRun("echo two\n", "second save")
	second := editAndRun("echo three\n", "third save")

	c.get(fmt.Sprintf("/executions/%d", first)).mustStatus(t, http.StatusOK).mustContain(t,
		fmt.Sprintf(`<a href="/jobs/%d/script/versions/2">version 2</a>`, id), "(the job is at version 3 now)")
	c.get(fmt.Sprintf("/executions/%d", second)).mustContain(t, fmt.Sprintf(`<a href="/jobs/%d/script/versions/3">version 3</a>`, id))
	c.get(fmt.Sprintf("/jobs/%d/script/versions/2", id)).mustStatus(t, http.StatusOK).mustContain(t, "echo two")
	for want, x := range map[int64]int64{2: first, 3: second} {
		var got struct {
			ScriptVersion int64 `json:"script_version"`
		}
		apiGet(t, c, fmt.Sprintf("/api/v1/executions/%d", x), &got)
		if got.ScriptVersion != want {
			t.Errorf("API: execution %d script_version %d, want %d", x, got.ScriptVersion, want)
		}
	}
}

// Run now with parameters: the dialog's parameters reach the handler and are recorded on the
// execution; a script job refuses them at the field and runs nothing.
func TestRunNowWithParams(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "report", Handler: "echo", Params: "--month=1"})
	if err != nil {
		t.Fatal(err)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, `<label for="params">Parameters for this run</label>`, `placeholder="--month=1"`)
	run := c.post(fmt.Sprintf("/jobs/%d/run", id), csrf, url.Values{"params": {"--month=2 --dry-run"}}).mustStatus(t, http.StatusSeeOther)
	got := <-h.ran
	if got.params != "--month=2 --dry-run" {
		t.Fatalf("the handler was given %q", got.params)
	}
	c.get(run.header.Get("Location")).mustContain(t, `<pre class="mono plain" id="exec-params">--month=2 --dry-run</pre>`)
	if x, err := h.st.ExecutionGet(ctx, got.execution); err != nil || x.Params != "--month=2 --dry-run" {
		t.Fatalf("stored execution params %q (%v)", x.Params, err)
	}
	// Without parameters the run gets the job's.
	c.post(fmt.Sprintf("/jobs/%d/run", id), csrf, url.Values{"params": {""}}).mustStatus(t, http.StatusSeeOther)
	if got := <-h.ran; got.params != "--month=1" {
		t.Fatalf("a run without parameters was given %q", got.params)
	}

	script, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "script", Handler: "shell", Params: "echo hi\n"})
	if err != nil {
		t.Fatal(err)
	}
	p := c.post(fmt.Sprintf("/jobs/%d/run", script), csrf, url.Values{"params": {"rm -rf /"}}).mustStatus(t, http.StatusOK)
	p.mustContain(t, `<dialog id="run-dialog" aria-labelledby="run-title" open data-modal="true">`, "runs its saved script")
	xs, err := h.st.ExecutionList(ctx, store.ExecutionFilter{JobID: script, Limit: 10})
	if err != nil || len(xs) != 0 {
		t.Fatalf("a refused run stored %d executions (%v)", len(xs), err)
	}
	select {
	case r := <-h.ran:
		t.Fatalf("a refused run ran: %+v", r)
	case <-time.After(0):
	}
}

// apiGet reads an API resource with the console's session.
func apiGet(t *testing.T, c *client, path string, out any) {
	t.Helper()
	p := c.get(path).mustStatus(t, http.StatusOK)
	if err := jsonUnmarshal(p.body, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func jsonUnmarshal(s string, out any) error { return json.Unmarshal([]byte(s), out) }

// TestJobPageShowsTriggerData: the job page lists each trigger's own description, params
// and data under its name (a secret job's trigger params as ***).
func TestJobPageShowsTriggerData(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	c.login()
	ctx := context.Background()
	id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "report", Handler: "echo"},
		sundial.Trigger{Name: "eu", Schedule: schedule.Simple{Interval: time.Hour, RepeatCount: -1},
			Description: "the EU run", Params: "--region eu", Data: map[string]any{"region": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, `<td>eu<div class="muted">the EU run</div>`,
		`<div class="muted mono">params --region eu</div>`, `<div class="muted mono">data {&#34;region&#34;:&#34;eu&#34;}</div>`)
}

// A run whose output was cut (its executor could not deliver some lines) says so on its
// page, beside the output, on every database.
func TestExecutionSaysItsOutputWasCut(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, dialect)
			c := h.client()
			c.login()
			ctx := context.Background()
			id, err := h.srv.Scheduler().ScheduleJob(ctx, sundial.Job{Name: "slow-shell", Handler: "echo"})
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().UnixMilli()
			cut := &store.Execution{JobID: id, ScheduledAt: at, FiredAt: at, FinishedAt: at + 1, Cause: store.CauseManual,
				State: store.ExecSucceeded, OutputLost: 34}
			whole := &store.Execution{JobID: id, ScheduledAt: at + 1, FiredAt: at + 1, FinishedAt: at + 2, Cause: store.CauseManual,
				State: store.ExecSucceeded}
			if _, err := h.st.ExecutionsInsert(ctx, []*store.Execution{cut, whole}); err != nil {
				t.Fatal(err)
			}
			c.get(fmt.Sprintf("/executions/%d", cut.ID)).mustStatus(t, http.StatusOK).mustContain(t,
				`id="output-cut">Output cut: 34 line(s) never reached the server`)
			if body := c.get(fmt.Sprintf("/executions/%d", whole.ID)).body; strings.Contains(body, "output-cut") {
				t.Error("a whole run's page says its output was cut")
			}
		})
	}
}
