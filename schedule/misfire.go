package schedule

import (
	"errors"
	"fmt"
	"time"
)

// MisfirePolicy says what a trigger does when its pending fire was missed by more than the
// misfire threshold (all nodes down, the trigger paused, or the cluster saturated).
type MisfirePolicy int

// The misfire policies. Each maps to one of Quartz's misfire instructions; which ones a
// trigger kind accepts follows Quartz (see validFor).
const (
	// MisfireSmart lets the trigger kind choose, as Quartz's MISFIRE_INSTRUCTION_SMART_POLICY:
	// a simple trigger that fires once fires now, one that repeats forever reschedules at its
	// next slot with the remaining count, one with a finite count reschedules now with the
	// existing count; cron, calendar-interval and daily-interval triggers fire once now.
	MisfireSmart MisfirePolicy = iota
	// MisfireIgnore fires every missed time, back to back, as soon as possible.
	MisfireIgnore
	// MisfireFireNow fires once now (Quartz FIRE_NOW / FIRE_ONCE_NOW), ignoring the calendar
	// and the end time for that one fire. A simple trigger that repeats acts as
	// MisfireRescheduleNowRemaining, as in Quartz.
	MisfireFireNow
	// MisfireDoNothing skips the missed fires and waits for the next regular one
	// (cron, calendar-interval and daily-interval triggers only).
	MisfireDoNothing
	// MisfireRescheduleNowExisting restarts a simple trigger now with the repeat count it had
	// left, missed fires included.
	MisfireRescheduleNowExisting
	// MisfireRescheduleNowRemaining restarts a simple trigger now with the missed fires
	// subtracted from its repeat count.
	MisfireRescheduleNowRemaining
	// MisfireRescheduleNextRemaining waits for a simple trigger's next regular slot and counts
	// the missed fires as fired.
	MisfireRescheduleNextRemaining
	// MisfireRescheduleNextExisting waits for a simple trigger's next regular slot without
	// counting the missed fires.
	MisfireRescheduleNextExisting
)

var misfireNames = [...]string{
	MisfireSmart:                   "smart",
	MisfireIgnore:                  "ignore",
	MisfireFireNow:                 "fire_now",
	MisfireDoNothing:               "do_nothing",
	MisfireRescheduleNowExisting:   "reschedule_now_existing",
	MisfireRescheduleNowRemaining:  "reschedule_now_remaining",
	MisfireRescheduleNextRemaining: "reschedule_next_remaining",
	MisfireRescheduleNextExisting:  "reschedule_next_existing",
}

// String returns the policy's stored name, such as "fire_now".
func (p MisfirePolicy) String() string {
	if p < 0 || int(p) >= len(misfireNames) {
		return fmt.Sprintf("MisfirePolicy(%d)", int(p))
	}
	return misfireNames[p]
}

// ParseMisfirePolicy parses a policy's stored name.
func ParseMisfirePolicy(s string) (MisfirePolicy, error) {
	for p, name := range misfireNames {
		if name == s {
			return MisfirePolicy(p), nil
		}
	}
	return 0, fmt.Errorf("unknown misfire policy %q", s)
}

// errMisfireForKind is Quartz's verdict on an instruction the trigger kind does not have.
var errMisfireForKind = errors.New("the misfire instruction code is invalid for this type of trigger")

// validFor reports whether kind accepts the policy.
func (p MisfirePolicy) validFor(kind Kind) error {
	switch p {
	case MisfireSmart, MisfireIgnore, MisfireFireNow:
		return nil
	case MisfireDoNothing:
		if kind != KindSimple {
			return nil
		}
	case MisfireRescheduleNowExisting, MisfireRescheduleNowRemaining,
		MisfireRescheduleNextRemaining, MisfireRescheduleNextExisting:
		if kind == KindSimple {
			return nil
		}
	default:
		return fmt.Errorf("unknown misfire policy %d", int(p))
	}
	return fmt.Errorf("misfire policy %s for a %s trigger: %w", p, kind, errMisfireForKind)
}

// QuartzMisfireInstruction maps one of Quartz's integer misfire instructions for a trigger
// kind to the policy, rejecting codes the kind does not have as Quartz does.
func QuartzMisfireInstruction(kind Kind, code int) (MisfirePolicy, error) {
	var p MisfirePolicy
	switch {
	case code == -1:
		p = MisfireIgnore
	case code == 0:
		p = MisfireSmart
	case code == 1:
		p = MisfireFireNow
	case kind == KindSimple && code >= 2 && code <= 5:
		p = [...]MisfirePolicy{MisfireRescheduleNowExisting, MisfireRescheduleNowRemaining,
			MisfireRescheduleNextRemaining, MisfireRescheduleNextExisting}[code-2]
	case kind != KindSimple && code == 2:
		p = MisfireDoNothing
	default:
		return 0, fmt.Errorf("misfire instruction %d for a %s trigger: %w", code, kind, errMisfireForKind)
	}
	return p, nil
}

// updateAfterMisfireRegular is the misfire handling that Quartz's cron, calendar-interval and
// daily-interval triggers share: fire once now (ignoring the calendar), or wait for the next
// included fire time strictly after now.
func updateAfterMisfireRegular(tr *Trigger, cal Calendar, now time.Time) {
	switch tr.Misfire {
	case MisfireSmart, MisfireFireNow:
		tr.Next = now
	case MisfireDoNothing:
		tr.Next = tr.nextIncluded(cal, now)
	}
}

// MissedFire is what a trigger's misfire policy makes of fires of its that were taken but not
// fired in time, while the trigger itself moved on: a node took them ahead of time and died,
// and the trigger's later fires went on in other hands. Re-applying the policy to the trigger
// would re-fire slots that already fired, so the policy is applied to the missed fires alone.
type MissedFire int

// The outcomes of Missed.
const (
	// MissedFireAll fires each missed fire, late: they are within the misfire threshold, or
	// the policy is MisfireIgnore.
	MissedFireAll MissedFire = iota
	// MissedFireOnce fires the missed fires once, now: the policies that fire now (smart for
	// most triggers, fire_now, the simple trigger's reschedule_now_*).
	MissedFireOnce
	// MissedSkip fires none of them: the policies that wait for the next regular fire
	// (do_nothing, reschedule_next_*), or a trigger that would never fire again.
	MissedSkip
)

// Missed applies the trigger's misfire policy to a fire it missed at missed (the earliest of
// them, when several), with the clock at now. The trigger is not changed.
func (tr *Trigger) Missed(cal Calendar, missed, now time.Time, threshold time.Duration) MissedFire {
	c := *tr
	c.Next = missed
	if !c.Misfired(now, threshold) {
		return MissedFireAll
	}
	c.UpdateAfterMisfire(cal, now)
	if !c.Next.IsZero() && !c.Next.After(now) {
		return MissedFireOnce
	}
	return MissedSkip
}
