package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestInProcessHandlerWarning (issue 22, item 16): a job that runs in the server's process
// with a handler the server lacks is accepted with a warning, on create and on update; a
// script handler's warning says to choose its app. The console asks the same rule (CheckJob)
// and shows it at the field (TestBrowserNewScriptJob).
func TestInProcessHandlerWarning(t *testing.T) {
	e := newEnv(t, "sqlite")
	var j api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "never", "handler": "shell", "params": "echo hi"}, 201, &j)
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], `no handler "shell"`) || !strings.Contains(j.Warnings[0], "choose its app") {
		t.Errorf("a shell job in process: warnings %q", j.Warnings)
	}
	id := j.ID
	j = api.Job{}
	e.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", id), map[string]any{"name": "never", "handler": "shell", "app": "ops", "params": "echo hi"}, 200, &j)
	if len(j.Warnings) != 0 {
		t.Errorf("a shell job on an app: warnings %q", j.Warnings)
	}
	j = api.Job{}
	e.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", id), map[string]any{"name": "never", "handler": "reprot"}, 200, &j)
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], `no handler "reprot"`) || !strings.Contains(j.Warnings[0], "built in: noop") {
		t.Errorf("an unknown handler in process, updated: warnings %q", j.Warnings)
	}
	j = api.Job{}
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "fine", "handler": "noop"}, 201, &j)
	if len(j.Warnings) != 0 {
		t.Errorf("noop in process: warnings %q", j.Warnings)
	}
	for _, c := range []struct {
		handler, app, field string
	}{{"shell", "", "app"}, {"Bash", "", "app"}, {"reprot", "", "handler"}, {"shell", "ops", ""}, {"noop", "", ""}} {
		got := e.srv.handlerWarnings(c.handler, c.app)
		field := ""
		if len(got) == 1 {
			field = got[0].Field
		}
		if field != c.field || len(got) > 1 {
			t.Errorf("handler %q app %q: warnings %+v, want one at %q", c.handler, c.app, got, c.field)
		}
	}
}
