package alarm

import (
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// Decision is what the policy makes of one finished execution.
type Decision string

// The decisions.
const (
	// Quiet tells nobody: under the threshold, within the silence window, or a success
	// with no alarm to recover from.
	Quiet Decision = "quiet"
	// Alert tells the targets of the failure.
	Alert Decision = "alert"
	// Recover tells the targets that the job succeeds again (PagerDuty: resolve).
	Recover Decision = "recover"
)

// The events a webhook receives besides execution.failed.
const (
	EventFailed    = "execution.failed"
	EventRecovered = "execution.recovered"
	// EventRaised is an alarm raised for a job by Raise, with a reason, not by a run.
	EventRaised = "job.alarm"
	// EventPaused is the alarm of the failure that paused its job (pause on failure): told
	// whatever the job's alarm policy, with the pause note as its reason.
	EventPaused = "job.paused"
)

// decidedKept is how many executions' decisions a job's state remembers; an alarm comes
// back for delivery only when its node died mid-delivery, long before that many more.
const decidedKept = 64

// CheckPolicy reports what is wrong with p, naming the field ("threshold", "window_ms",
// "silence_ms"); nil when it is good.
func CheckPolicy(p store.AlarmPolicy) (field string, err error) {
	switch {
	case p.Threshold < 0 || p.Threshold > 1000:
		return "threshold", fmt.Errorf("want 0 to 1000 failures, got %d", p.Threshold)
	case p.WindowMs < 0 || p.WindowMs > int64(31*24*time.Hour/time.Millisecond):
		return "window_ms", fmt.Errorf("want 0 to 31 days in milliseconds, got %d", p.WindowMs)
	case p.WindowMs > 0 && p.Threshold < 2:
		return "window_ms", fmt.Errorf("a window counts a threshold of 2 or more failures; the threshold is %d", p.Threshold)
	case p.SilenceMs < 0 || p.SilenceMs > int64(31*24*time.Hour/time.Millisecond):
		return "silence_ms", fmt.Errorf("want 0 to 31 days in milliseconds, got %d", p.SilenceMs)
	}
	return "", nil
}

// Step applies the policy p to the job's state st for execution id, finished at (Unix ms),
// failed or not, and returns the new state and the decision. It is pure: the caller reads
// and writes the state (with a compare-and-set) and delivers.
//
// An execution already decided (its alarm is delivered again after its node died) gets the
// decision it got then, and the state is unchanged.
//
// A failure counts toward the threshold: in a row, or within the window. At the threshold
// an alarm goes out, opens an incident (if none is open) and starts the count again,
// unless the last alarm went out less than the silence window ago: then the count stays
// at the threshold and the first failure after the window alarms. A success resets the count in a row; when an incident is open it
// closes it, clears the window, and tells the targets when p.Recovery.
func Step(p store.AlarmPolicy, st store.AlarmStateRow, id int64, failed bool, at int64) (store.AlarmStateRow, Decision) {
	if d, ok := decided(st, id); ok {
		return st, d
	}
	threshold := max(p.Threshold, 1)
	d := Quiet
	if failed {
		count := 0
		if p.WindowMs > 0 {
			kept := st.FailedAt[:0:0]
			for _, t := range st.FailedAt {
				if t > at-p.WindowMs {
					kept = append(kept, t)
				}
			}
			kept = append(kept, at)
			if len(kept) > threshold {
				kept = kept[len(kept)-threshold:]
			}
			st.FailedAt, count = kept, len(kept)
		} else {
			st.Failures++
			count = st.Failures
		}
		silenced := st.LastAlarmAt != 0 && p.SilenceMs > 0 && at-st.LastAlarmAt < p.SilenceMs
		if count >= threshold && !silenced {
			// The count starts again, so each crossing alarms once: the next alarm takes
			// threshold more failures.
			d = Alert
			st.Open, st.LastAlarmAt, st.Failures, st.FailedAt = true, at, 0, nil
		}
	} else {
		st.Failures = 0
		if st.Open {
			st.Open, st.FailedAt = false, nil
			if p.Recovery {
				d = Recover
			}
		}
	}
	st.Decided = append(st.Decided, store.AlarmDecided{ExecutionID: id, Decision: string(d)})
	if len(st.Decided) > decidedKept {
		st.Decided = st.Decided[len(st.Decided)-decidedKept:]
	}
	return st, d
}

// decided is the decision st keeps for execution id.
func decided(st store.AlarmStateRow, id int64) (Decision, bool) {
	for _, d := range st.Decided {
		if d.ExecutionID == id {
			return Decision(d.Decision), true
		}
	}
	return "", false
}
