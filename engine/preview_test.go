package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestPreviewTriggerAppliesMisfire: a trigger whose pending fire is long past previews the
// times its misfire policy gives, as acquisition will fire them; one on time previews its
// schedule. Nothing is written.
func TestPreviewTriggerAppliesMisfire(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		now := time.Date(2024, 1, 10, 15, 0, 0, 0, time.UTC)
		e := newEngine(t, st, newRecorder(), "n1", clock.NewFake(now), nil)
		noon, err := schedule.ParseCron("0 0 12 * * ?", time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		job := insertJob(t, st, "j", nil)
		day := func(d int) time.Time { return time.Date(2024, 1, d, 12, 0, 0, 0, time.UTC) }
		for _, tc := range []struct {
			policy   schedule.MisfirePolicy
			at       time.Time
			misfired bool
			want     []time.Time
		}{
			{schedule.MisfireDoNothing, now, true, []time.Time{day(11), day(12)}},
			{schedule.MisfireFireNow, now, true, []time.Time{now, day(11)}},
			{schedule.MisfireDoNothing, start, false, []time.Time{day(1), day(2)}},
		} {
			row := insertTrigger(t, st, job, tc.policy.String()+tc.at.String(), noon, start, func(r *store.Trigger) {
				r.MisfirePolicy = tc.policy.String()
			})
			p, err := e.PreviewTrigger(context.Background(), row, tc.at, 2)
			if err != nil {
				t.Fatal(err)
			}
			if p.Misfired != tc.misfired || len(p.Fires) != len(tc.want) {
				t.Fatalf("%s at %s: %+v, want misfired %v and %v", tc.policy, tc.at, p, tc.misfired, tc.want)
			}
			for i := range tc.want {
				if !p.Fires[i].Equal(tc.want[i]) {
					t.Errorf("%s at %s: fire %d is %s, want %s", tc.policy, tc.at, i, p.Fires[i], tc.want[i])
				}
			}
			stored, err := st.TriggerGet(context.Background(), row.ID)
			if err != nil || stored.NextFireAt != row.NextFireAt {
				t.Errorf("preview changed the stored trigger: %+v, %v", stored, err)
			}
		}
	})
}
