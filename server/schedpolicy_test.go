package server

import (
	"fmt"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestTriggerJitterAndDSTAPI: a trigger's jitter and DST policy are stored and shown by the
// API on every database, its preview gives each fire's jittered start and marks the fire
// moved out of the spring gap, and a bad value is a 400 naming its field, storing nothing.
func TestTriggerJitterAndDSTAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		var j api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "spread", "handler": "noop", "triggers": []map[string]any{{
			"cron": "0 30 2 * * ?", "time_zone": "America/New_York", "start": "2027-03-13T00:00:00-05:00",
			"jitter_ms": 5000, "dst": "once"}}}, 201, &j)
		if tr := j.Triggers[0]; tr.JitterMs != 5000 || tr.DST != "once" {
			t.Fatalf("created trigger: jitter %d, dst %q", tr.JitterMs, tr.DST)
		}
		var next api.TriggerNext
		e.call("GET", fmt.Sprintf("/api/v1/triggers/%d/next?n=2&after=2027-03-13T12:00:00Z", j.Triggers[0].ID), nil, 200, &next)
		if len(next.Fires) != 2 || next.Fires[0] != "2027-03-14T03:00:00.000-04:00" || len(next.Due) != 2 ||
			len(next.DST) != 2 || next.DST[0] != "gap" || next.DST[1] != "" {
			t.Fatalf("preview %+v: want 2027-03-14T03:00 EDT first, marked gap, with starts", next)
		}

		var plain api.Trigger
		e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), map[string]any{"cron": "0 0 * * * ?"}, 201, &plain)
		if plain.JitterMs != 0 || plain.DST != "quartz" {
			t.Errorf("default trigger: jitter %d, dst %q; want 0, quartz", plain.JitterMs, plain.DST)
		}
		for _, bad := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"cron": "0 0 * * * ?", "dst": "twice"}, "dst"},
			{map[string]any{"every_ms": 60000, "dst": "once"}, "dst"},
			{map[string]any{"cron": "0 0 * * * ?", "jitter_ms": -1}, "jitter_ms"},
			{map[string]any{"cron": "0 0 * * * ?", "jitter_ms": int64(1) << 62}, "jitter_ms"},
		} {
			if err := e.callErr("POST", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), bad.body, 400); err.Field != bad.field {
				t.Errorf("%v: field %q (%s), want %q", bad.body, err.Field, err.Message, bad.field)
			}
		}
		if err := e.callErr("POST", "/api/v1/jobs", map[string]any{"name": "bad", "handler": "noop",
			"triggers": []map[string]any{{"cron": "0 0 * * * ?", "dst": "sometimes"}}}, 400); err.Field != "triggers[0].dst" {
			t.Errorf("job create: field %q, want triggers[0].dst", err.Field)
		}
		var page api.Page[api.Trigger]
		e.call("GET", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), nil, 200, &page)
		if len(page.Items) != 2 {
			t.Errorf("%d triggers after the refused ones, want 2", len(page.Items))
		}
	})
}
