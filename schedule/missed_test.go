package schedule

import (
	"testing"
	"time"
)

// TestMissed checks what each kind of misfire policy makes of fires a trigger missed while it
// went on: fire each late, fire once now, or skip them.
func TestMissed(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	cron, err := ParseCron("0 * * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	every := Simple{Interval: time.Minute, RepeatCount: RepeatForever}
	for _, c := range []struct {
		name   string
		s      Schedule
		policy MisfirePolicy
		late   time.Duration
		want   MissedFire
	}{
		{"cron do_nothing", cron, MisfireDoNothing, 3 * time.Minute, MissedSkip},
		{"cron smart", cron, MisfireSmart, 3 * time.Minute, MissedFireOnce},
		{"cron fire_now", cron, MisfireFireNow, 3 * time.Minute, MissedFireOnce},
		{"cron ignore", cron, MisfireIgnore, 3 * time.Minute, MissedFireAll},
		{"cron do_nothing within the threshold", cron, MisfireDoNothing, 30 * time.Second, MissedFireAll},
		{"simple smart, repeating forever", every, MisfireSmart, 3 * time.Minute, MissedSkip},
		{"simple reschedule_now_existing", every, MisfireRescheduleNowExisting, 3 * time.Minute, MissedFireOnce},
		{"simple reschedule_next_remaining", every, MisfireRescheduleNextRemaining, 3 * time.Minute, MissedSkip},
		{"simple once, smart", Simple{}, MisfireSmart, 3 * time.Minute, MissedFireOnce},
	} {
		tr := &Trigger{Schedule: c.s, Start: now.Add(-time.Hour), Misfire: c.policy, Next: now.Add(time.Minute)}
		before := *tr
		if got := tr.Missed(nil, now.Add(-c.late), now, time.Minute); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
		if *tr != before {
			t.Errorf("%s: Missed changed the trigger to %+v", c.name, *tr)
		}
	}
}
