package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// alarmState is the JSON of a job_alarms row's state.
type alarmState struct {
	Failures    int                  `json:"failures,omitempty"`
	FailedAt    []int64              `json:"failed_at,omitempty"`
	Open        bool                 `json:"open,omitempty"`
	LastAlarmAt int64                `json:"last_alarm_at,omitempty"`
	Decided     []store.AlarmDecided `json:"decided,omitempty"`
}

// JobAlarmGet returns the job's alarm state, a zero row when it has none.
func (e *executor) JobAlarmGet(ctx context.Context, jobID int64) (*store.AlarmStateRow, error) {
	var text string
	out := &store.AlarmStateRow{JobID: jobID}
	err := e.queryRow(ctx, "SELECT state, version FROM job_alarms WHERE job_id = ?", jobID).Scan(&text, &out.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: alarm state of job %d: %w", jobID, err)
	}
	var st alarmState
	if err := decodeJSON(text, &st); err != nil {
		return nil, fmt.Errorf("sqlstore: alarm state of job %d: %w", jobID, err)
	}
	out.Failures, out.FailedAt, out.Open, out.LastAlarmAt, out.Decided = st.Failures, st.FailedAt, st.Open, st.LastAlarmAt, st.Decided
	return out, nil
}

// JobAlarmPut writes st with a compare-and-set on its version: an insert for version 0
// (which the primary key lets only one writer win), an update of that version otherwise.
func (e *executor) JobAlarmPut(ctx context.Context, st *store.AlarmStateRow) error {
	text, err := encodeJSON(alarmState{Failures: st.Failures, FailedAt: st.FailedAt, Open: st.Open,
		LastAlarmAt: st.LastAlarmAt, Decided: st.Decided}, false)
	if err != nil {
		return err
	}
	if st.Version == 0 {
		_, err := e.exec(ctx, "INSERT INTO job_alarms (job_id, state, version) VALUES (?, ?, 1)", st.JobID, text)
		if isUniqueViolation(err) {
			return fmt.Errorf("alarm state of job %d: %w", st.JobID, store.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: alarm state of job %d: %w", st.JobID, err)
		}
		st.Version = 1
		return nil
	}
	res, err := e.exec(ctx, "UPDATE job_alarms SET state = ?, version = version + 1 WHERE job_id = ? AND version = ?",
		text, st.JobID, st.Version)
	if err != nil {
		return fmt.Errorf("sqlstore: alarm state of job %d: %w", st.JobID, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("alarm state of job %d at version %d: %w", st.JobID, st.Version, store.ErrConflict)
	}
	st.Version++
	return nil
}
