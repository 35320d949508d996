package server

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestClearSecretsWarning (issue 20, item 13): a manual app whose jobs have secret params
// and that points at an http:// address is warned about, in the answers to putting and
// reading the app and to creating and updating such a job; https:// addresses, or no secret
// job, are not.
func TestClearSecretsWarning(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, dialect, func(c *Config) { c.Scheduler.Secrets = testKeyring(t, "k1", 7) })
		putApp := func(addr string) api.App {
			t.Helper()
			var a api.App
			e.call("PUT", "/api/v1/apps/legacy", map[string]any{"address_mode": "manual", "addresses": []string{addr}}, 200, &a)
			return a
		}
		warned := func(what string, warnings []string, want bool) {
			t.Helper()
			got := len(warnings) == 1 && strings.Contains(warnings[0], "in clear") && strings.Contains(warnings[0], "http://10.0.0.5:9999")
			if got != want || (!want && len(warnings) > 0) {
				t.Errorf("%s: warnings %q, want a warning of secrets in clear: %v", what, warnings, want)
			}
		}
		warned("a plain address, no secret job", putApp("http://10.0.0.5:9999").Warnings, false)
		var job api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"group": "g", "name": "backup", "handler": "backup", "app": "legacy",
			"params": "pw=hunter2", "params_secret": true}, 201, &job)
		warned("creating a secret job of the app", job.Warnings, true)
		var got api.App
		e.call("GET", "/api/v1/apps/legacy", nil, 200, &got)
		warned("reading the app", got.Warnings, true)
		var updated api.Job
		e.call("PUT", "/api/v1/jobs/"+itoa(job.ID), map[string]any{"group": "g", "name": "backup", "handler": "backup", "app": "legacy",
			"params": "***", "params_secret": true, "description": "nightly"}, 200, &updated)
		warned("updating the secret job", updated.Warnings, true)
		warned("an https address", putApp("https://10.0.0.5:9999").Warnings, false)
		warned("back to http", putApp("http://10.0.0.5:9999").Warnings, true)
	})
}
