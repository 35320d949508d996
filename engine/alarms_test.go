package engine

import (
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestAlarmsWhich: a final failure of a job with targets goes to the alarm sender; a success
// goes too only when the job's alarm policy needs it (a recovery notice, or a count in a row
// that a success resets); nothing goes for a job without targets or a failure with a retry
// left.
func TestAlarmsWhich(t *testing.T) {
	targets := []string{"ops@example.com"}
	for _, tc := range []struct {
		name    string
		state   store.ExecutionState
		attempt int
		job     store.Job
		want    bool
	}{
		{"final failure", store.ExecFailed, 0, store.Job{AlarmTargets: targets}, true},
		{"timed out", store.ExecTimedOut, 0, store.Job{AlarmTargets: targets}, true},
		{"retry left", store.ExecFailed, 0, store.Job{AlarmTargets: targets, MaxRetries: 1}, false},
		{"no targets", store.ExecFailed, 0, store.Job{}, false},
		{"success, default policy", store.ExecSucceeded, 0, store.Job{AlarmTargets: targets}, false},
		{"success, recovery", store.ExecSucceeded, 0, store.Job{AlarmTargets: targets, AlarmPolicy: store.AlarmPolicy{Recovery: true}}, true},
		{"success, in a row", store.ExecSucceeded, 0, store.Job{AlarmTargets: targets, AlarmPolicy: store.AlarmPolicy{Threshold: 3}}, true},
		{"success, in a window", store.ExecSucceeded, 0, store.Job{AlarmTargets: targets,
			AlarmPolicy: store.AlarmPolicy{Threshold: 3, WindowMs: 60000}}, false},
		{"success, recovery, no targets", store.ExecSucceeded, 0, store.Job{AlarmPolicy: store.AlarmPolicy{Recovery: true}}, false},
	} {
		if got := alarms(tc.state, &store.Execution{Attempt: tc.attempt}, &tc.job); got != tc.want {
			t.Errorf("%s: alarms = %v, want %v", tc.name, got, tc.want)
		}
	}
}
