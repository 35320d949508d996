package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestTriggerZonesAPI: a trigger of two zones is one trigger in the API (its zones listed),
// and its preview lists each fire with its zone: the same instant in both zones twice, and
// London's spring-forward day without its fire. Bad zones are a 400 naming the field.
func TestTriggerZonesAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		var j api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "zoned", "handler": "noop", "triggers": []map[string]any{{
			"cron": "0 30 1 * * ?", "zones": []string{"Europe/London", "Africa/Abidjan"}, "start": "2026-03-27T00:00:00Z"}}}, 201, &j)
		tr := j.Triggers[0]
		if !slices.Equal(tr.Zones, []string{"Europe/London", "Africa/Abidjan"}) || tr.TimeZone != "Europe/London" {
			t.Fatalf("created trigger: zones %q time_zone %q", tr.Zones, tr.TimeZone)
		}
		var page api.Page[api.Trigger]
		e.call("GET", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), nil, 200, &page)
		if len(page.Items) != 1 {
			t.Errorf("job lists %d triggers, want 1 (its zone rows hidden)", len(page.Items))
		}
		var next api.TriggerNext
		e.call("GET", fmt.Sprintf("/api/v1/triggers/%d/next?n=7&after=2026-03-27T00:00:00Z", tr.ID), nil, 200, &next)
		wantFires := []string{"2026-03-27T01:30:00.000Z", "2026-03-27T01:30:00.000Z", "2026-03-28T01:30:00.000Z",
			"2026-03-28T01:30:00.000Z", "2026-03-29T01:30:00.000Z", "2026-03-30T01:30:00.000+01:00", "2026-03-30T01:30:00.000Z"}
		wantZones := []string{"Europe/London", "Africa/Abidjan", "Europe/London", "Africa/Abidjan", "Africa/Abidjan",
			"Europe/London", "Africa/Abidjan"}
		if !slices.Equal(next.Fires, wantFires) || !slices.Equal(next.Zones, wantZones) {
			t.Errorf("preview fires %q zones %q\nwant %q\n     %q", next.Fires, next.Zones, wantFires, wantZones)
		}
		for _, bad := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"cron": "0 0 * * * ?", "zones": []string{"Europe/Paris", "Mars/Olympus"}}, "zones[1]"},
			{map[string]any{"cron": "0 0 * * * ?", "zones": []string{"Europe/Paris", "Asia/Tokyo", "Europe/Paris"}}, "zones[2]"},
			{map[string]any{"cron": "0 0 * * * ?", "time_zone": "UTC", "zones": []string{"Europe/Paris", "Asia/Tokyo"}}, "time_zone"},
		} {
			if err := e.callErr("POST", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), bad.body, 400); err.Field != bad.field {
				t.Errorf("%v: field %q (%s), want %q", bad.body, err.Field, err.Message, bad.field)
			}
		}
		e.call("GET", fmt.Sprintf("/api/v1/jobs/%d/triggers", j.ID), nil, 200, &page)
		if len(page.Items) != 1 {
			t.Errorf("%d triggers after the refused ones, want 1", len(page.Items))
		}
		// A zone row is not a trigger of its own: acting on it alone is refused.
		zrs, err := e.st.TriggerList(context.Background(), store.TriggerFilter{ZoneOf: tr.ID})
		if err != nil || len(zrs) != 1 || zrs[0].TimeZone != "Africa/Abidjan" {
			t.Fatalf("zone rows %+v, %v", zrs, err)
		}
		for _, path := range []string{"", "/pause"} {
			method := map[string]string{"": "DELETE", "/pause": "POST"}[path]
			if err := e.callErr(method, fmt.Sprintf("/api/v1/triggers/%d%s", zrs[0].ID, path), nil, 400); err.Field != "id" {
				t.Errorf("%s zone row %d%s: field %q, want id", method, zrs[0].ID, path, err.Field)
			}
		}
		e.call("DELETE", fmt.Sprintf("/api/v1/triggers/%d", tr.ID), nil, 204, nil)
		if zrs, err := e.st.TriggerList(context.Background(), store.TriggerFilter{ZoneOf: tr.ID}); err != nil || len(zrs) != 0 {
			t.Errorf("after deleting the trigger: zone rows %+v, %v", zrs, err)
		}
	})
}
