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

// TestTriggerJitterAndDSTInConsole: the editor sets a trigger's jitter and DST policy, shows
// a bad one at its field and stores nothing, lists them on the job, keeps them in a copy, and
// previews the DST policy's times (New York, 2026-03-08: 02:30 does not exist; once fires
// at 03:00, Quartz-exact skips the day).
func TestTriggerJitterAndDSTInConsole(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	ctx := context.Background()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"spread"}, "triggers[0].cron": {"0 0 2 * * ?"},
		"triggers[0].jitter_ms": {"60000"}, "triggers[0].dst": {"once"}, "triggers[0].time_zone": {"America/New_York"}}))
	ts, _ := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id})
	if len(ts) != 1 || ts[0].JitterMs != 60000 || ts[0].DSTPolicy != "once" {
		t.Fatalf("stored triggers %+v", ts)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "jitter up to 60000 ms", "DST once")
	c.get(fmt.Sprintf("/jobs/%d/copy", id)).mustContain(t, `value="60000"`, `<option value="once" selected`)

	for _, tc := range []struct {
		add   url.Values
		field string
		msg   string
	}{
		{url.Values{"kind": {"cron"}, "cron": {"0 0 2 * * ?"}, "dst": {"twice"}}, "err-dst", "DST policy"},
		{url.Values{"kind": {"simple"}, "every_ms": {"60000"}, "dst": {"once"}}, "err-dst", "elapsed time"},
		{url.Values{"kind": {"cron"}, "cron": {"0 0 2 * * ?"}, "jitter_ms": {"-1"}}, "err-jitter_ms", "want 0"},
		{url.Values{"kind": {"cron"}, "cron": {"0 0 2 * * ?"}, "jitter_ms": {"86400001"}}, "err-jitter_ms", "want 0"},
	} {
		tc.add.Set("time_zone", "UTC")
		c.post(fmt.Sprintf("/jobs/%d/triggers", id), csrf, tc.add).mustContain(t, `id="`+tc.field+`" role="alert">`, tc.msg)
	}
	if ts, _ := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id}); len(ts) != 1 {
		t.Fatalf("refused triggers were stored: %d triggers", len(ts))
	}

	q := url.Values{"prefix": {"triggers[0]."}, "triggers[0].kind": {"cron"}, "triggers[0].cron": {"0 30 2 ? * SUN"},
		"triggers[0].time_zone": {"America/New_York"}, "triggers[0].start": {"2026-03-01T00:00:00Z"}, "triggers[0].dst": {"once"}}
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustStatus(t, http.StatusOK).mustContain(t,
		"Sun 2026-03-01 02:30:00 EST", "Sun 2026-03-08 03:00:00 EDT", "Sun 2026-03-15 02:30:00 EDT")
	q.Set("triggers[0].dst", "bogus")
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustContain(t, `id="err-triggers-0-dst" role="alert" hx-swap-oob="true">DST policy`)
}

// TestTriggerZonesInConsole: the editor's "Also in zones" input (the zones besides the time
// zone) makes a trigger of several zones; the
// job page shows its zones, the copy form keeps them, the editor's preview lists each fire
// with its zone (the same instant twice), and a bad zone is shown at the Zones input.
func TestTriggerZonesInConsole(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	ctx := context.Background()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"zoned"}, "triggers[0].cron": {"0 30 1 * * ?"},
		"triggers[0].time_zone": {"Europe/London"}, "triggers[0].zones": {"Africa/Abidjan"}}))
	ts, _ := h.st.TriggerList(ctx, store.TriggerFilter{JobID: id})
	if len(ts) != 1 || strings.Join(ts[0].Zones, ",") != "Europe/London,Africa/Abidjan" {
		t.Fatalf("stored triggers %+v", ts)
	}
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, "in Europe/London, Africa/Abidjan")
	c.get(fmt.Sprintf("/jobs/%d/copy", id)).mustContain(t, `value="Africa/Abidjan"`)
	c.post(fmt.Sprintf("/jobs/%d/triggers", id), csrf, url.Values{"kind": {"cron"}, "cron": {"0 0 2 * * ?"},
		"time_zone": {"UTC"}, "zones": {"Europe/Paris Mars/Olympus"}}).mustContain(t, `id="err-zones" role="alert">`, "Mars/Olympus")

	q := url.Values{"prefix": {"triggers[0]."}, "triggers[0].kind": {"cron"}, "triggers[0].cron": {"0 30 1 * * ?"},
		"triggers[0].time_zone": {"Europe/London"}, "triggers[0].zones": {"Africa/Abidjan"}, "triggers[0].start": {"2026-03-28T00:00:00Z"}}
	c.do("GET", "/preview?"+q.Encode(), nil, nil).mustStatus(t, http.StatusOK).mustContain(t,
		`Sat 2026-03-28 01:30:00 GMT <span class="zone">Europe/London</span>`,
		`Sat 2026-03-28 01:30:00 GMT <span class="zone">Africa/Abidjan</span>`,
		`Sun 2026-03-29 01:30:00 GMT <span class="zone">Africa/Abidjan</span>`,
		`Mon 2026-03-30 01:30:00 BST <span class="zone">Europe/London</span>`)
}

// TestJobFiresAfterInConsole: the job page lists a stored trigger's times after a given
// instant (as `sundial trigger next --after` does), exact and strictly after it, for a paused
// trigger too; a bad instant is a 400 naming `after`.
func TestJobFiresAfterInConsole(t *testing.T) {
	h := newHarness(t, "sqlite")
	c := h.client()
	csrf := c.login()
	id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"night"}, "triggers[0].cron": {"0 30 2 * * ?"},
		"triggers[0].time_zone": {"America/New_York"}}))
	c.get(fmt.Sprintf("/jobs/%d", id)).mustContain(t, `hx-get="/jobs/`+fmt.Sprint(id)+`/fires"`, `id="fires-after" name="after"`)
	// 2030-03-10 is New York's spring-forward day: 02:30 does not exist, and Quartz skips it.
	// 02:30 EST is 07:30 UTC, 02:30 EDT 06:30 UTC.
	want := []string{`datetime="2030-03-09T07:30:00Z"`, `datetime="2030-03-11T06:30:00Z"`, `datetime="2030-03-12T06:30:00Z"`}
	c.get(fmt.Sprintf("/jobs/%d/fires?after=2030-03-08T02:30:00-05:00", id)).mustStatus(t, http.StatusOK).mustContain(t, want...)
	c.post(fmt.Sprintf("/jobs/%d/pause", id), csrf, url.Values{}).mustStatus(t, http.StatusSeeOther)
	c.get(fmt.Sprintf("/jobs/%d/fires", id)).mustContain(t, "No trigger waits to fire.")
	p := c.get(fmt.Sprintf("/jobs/%d/fires?after=2030-03-08T02:30:00-05:00", id)).mustStatus(t, http.StatusOK).mustContain(t, want...)
	if strings.Contains(p.body, `datetime="2030-03-08T07:30:00Z"`) || strings.Contains(p.body, `datetime="2030-03-10`) {
		t.Errorf("the instant itself is listed; want only the times strictly after it:\n%s", p.body)
	}
	c.get(fmt.Sprintf("/jobs/%d/fires?after=tomorrow", id)).mustStatus(t, http.StatusBadRequest).mustContain(t, "after")
}
