package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// In the console an operator gives a trigger its catch-up policy, is told a bad window at its
// field, dry-runs a backfill (the plan with exact intervals, nothing stored), starts it, sees
// its progress on the job page and each run's data interval and backfill on the run's page,
// on every database.
func TestConsoleCatchUpAndBackfill(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, dialect)
			c := h.client()
			csrf := c.login()
			bad := c.createJob(csrf, url.Values{"name": {"late"}, "handler": {"echo"}, "triggers[0].cron": {"0 0 2 * * ?"},
				"triggers[0].catchup_window": {"soon"}})
			bad.mustStatus(t, http.StatusOK).mustContain(t, "is not a duration")
			id := jobIDFrom(t, c.createJob(csrf, url.Values{"name": {"nightly"}, "handler": {"echo"},
				"triggers[0].cron": {"0 0 2 * * ?"}, "triggers[0].catchup_window": {"2h"}, "triggers[0].catchup": {"coalesce"}}).
				mustStatus(t, http.StatusSeeOther))
			job := fmt.Sprintf("/jobs/%d", id)
			c.get(job).mustStatus(t, http.StatusOK).mustContain(t, "catch-up coalesce, window 2h", `id="backfill-open"`)

			rng := url.Values{"from": {"2026-03-01T00:00:00Z"}, "to": {"2026-03-03T23:59:59Z"}, "max_concurrent": {"2"}}
			plan := url.Values{"dry_run": {"true"}}
			for k, v := range rng {
				plan[k] = v
			}
			c.post(job+"/backfills", csrf, plan).mustStatus(t, http.StatusOK).mustContain(t,
				"Dry run: 3 scheduled time(s) in 3 run(s); nothing stored.",
				`<time datetime="2026-02-28T02:00:00Z">`, `<time datetime="2026-03-03T02:00:00Z">`)
			if p := c.get(job); strings.Contains(p.body, `id="backfills"`) {
				t.Fatal("the dry run stored a backfill")
			}
			c.post(job+"/backfills", csrf, url.Values{"from": {"2026-03-03T00:00:00Z"}, "to": {"2026-03-01T00:00:00Z"}}).
				mustStatus(t, http.StatusOK).mustContain(t, "is before from")

			started := c.post(job+"/backfills", csrf, rng).mustStatus(t, http.StatusSeeOther)
			if loc := started.header.Get("Location"); !strings.HasPrefix(loc, job+"?done=backfill-") {
				t.Fatalf("started backfill went to %q", loc)
			}
			var runs []int64
			for range 3 {
				runs = append(runs, (<-h.ran).execution)
			}
			c.get(job).mustContain(t, `id="backfills"`, "3 / 3")
			intervals := map[string]bool{}
			for _, x := range runs {
				p := c.get(fmt.Sprintf("/executions/%d", x)).mustStatus(t, http.StatusOK).mustContain(t, "Data interval", "backfill")
				for _, end := range []string{"2026-03-01T02:00:00Z", "2026-03-02T02:00:00Z", "2026-03-03T02:00:00Z"} {
					if strings.Contains(p.body, `– <time datetime="`+end+`">`) {
						intervals[end] = true
					}
				}
			}
			if len(intervals) != 3 {
				t.Errorf("the runs' pages show the interval ends %v, want the three scheduled times", intervals)
			}
		})
	}
}
