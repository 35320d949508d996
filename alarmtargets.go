package sundial

import (
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// AlarmPolicy says when a job's alarm targets are told (docs/policies.md, "Alarm channels").
type AlarmPolicy struct {
	// Threshold is how many failures raise an alarm: in a row, or within Window when it is
	// set. 0 or 1: every failure that has no retry left.
	Threshold int
	// Window counts Threshold failures within this long instead of in a row.
	Window time.Duration
	// Silence is how long after an alarm no other alarm of the job goes out.
	Silence time.Duration
	// Recovery tells the targets when the job succeeds again after an alarm (PagerDuty:
	// the incident is resolved).
	Recovery bool
}

func (p AlarmPolicy) row() store.AlarmPolicy {
	return store.AlarmPolicy{Threshold: p.Threshold, WindowMs: p.Window.Milliseconds(),
		SilenceMs: p.Silence.Milliseconds(), Recovery: p.Recovery}
}

// AlarmPolicyOf is the policy a stored job has.
func AlarmPolicyOf(p store.AlarmPolicy) AlarmPolicy {
	return AlarmPolicy{Threshold: p.Threshold, Window: time.Duration(p.WindowMs) * time.Millisecond,
		Silence: time.Duration(p.SilenceMs) * time.Millisecond, Recovery: p.Recovery}
}

// sealAlarmTargets makes row's alarm targets what the store keeps: the chat and paging
// services' targets sealed (they carry tokens, signing secrets, routing keys), others as
// they are. On an update (cur is the stored job) a masked target ("slack:***", as the API
// shows one) keeps the stored target it stands for: the n-th masked target of a service
// keeps the n-th stored target of that service, so a client that reads a job and sends it
// back does not lose its secrets.
func (s *Scheduler) sealAlarmTargets(j Job, row, cur *store.Job) error {
	var stored map[alarm.Kind][]string
	if cur != nil {
		stored = map[alarm.Kind][]string{}
		for _, raw := range cur.AlarmTargets {
			if t, err := alarm.ParseTarget(alarm.MaskTarget(raw)); err == nil && t.Masked {
				stored[t.Kind] = append(stored[t.Kind], raw)
			}
		}
	}
	used := map[alarm.Kind]int{}
	out := make([]string, len(j.AlarmTargets))
	for i, raw := range j.AlarmTargets {
		field := fmt.Sprintf("alarm_targets[%d]", i)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("sundial: job %s: %w", j.Name, schedule.Fieldf(field, format, args...))
		}
		t, err := alarm.ParseTarget(raw) // jobRow checked it
		if err != nil {
			return bad("%v", err)
		}
		switch {
		case t.Masked:
			n := used[t.Kind]
			if n >= len(stored[t.Kind]) {
				return bad("%q stands for a stored %s target, and the job has no other: send the target itself", raw, t.Kind)
			}
			used[t.Kind]++
			out[i] = stored[t.Kind][n]
		case alarm.IsChannel(t.Kind):
			sealed, err := alarm.SealTarget(s.secrets, raw)
			if errors.Is(err, secret.ErrNoKey) {
				return bad("a %s target carries a secret, which is stored sealed: %v", t.Kind, secret.ErrNoKey)
			}
			if err != nil {
				return fmt.Errorf("sundial: job %s: seal %s: %w", j.Name, field, err)
			}
			out[i] = sealed
		default:
			out[i] = raw
		}
	}
	if len(out) == 0 {
		out = nil
	}
	row.AlarmTargets = out
	return nil
}
