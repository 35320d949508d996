package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// TestRetentionSweep: the leader's retention duty deletes finished executions (and their
// output) fired before the retention, and nothing else.
func TestRetentionSweep(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		now := time.Now()
		old, recent := now.Add(-31*24*time.Hour).UnixMilli(), now.Add(-time.Hour).UnixMilli()
		mk := func(state store.ExecutionState, fired int64) *store.Execution {
			return &store.Execution{JobID: 1, ScheduledAt: fired, FiredAt: fired, Cause: store.CauseAPI, State: state}
		}
		oldDone, oldRunning, recentDone := mk(store.ExecSucceeded, old), mk(store.ExecRunning, old), mk(store.ExecFailed, recent)
		if _, err := e.st.ExecutionsInsert(ctx, []*store.Execution{oldDone, oldRunning, recentDone}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.ExecutionLogAppend(ctx, oldDone.ID, []store.LogLine{{Line: 1, At: old, Message: "x"}}); err != nil {
			t.Fatal(err)
		}

		n, err := e.srv.sweepRetention(ctx, now)
		if err != nil || n != 1 {
			t.Fatalf("sweepRetention = %d, %v; want the one old finished execution", n, err)
		}
		if _, err := e.st.ExecutionGet(ctx, oldDone.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the old finished execution is still there (%v)", err)
		}
		if lines, err := e.st.ExecutionLogList(ctx, oldDone.ID, 0, 10); err != nil || len(lines) != 0 {
			t.Errorf("its output is still there: %v, %v", lines, err)
		}
		for _, keep := range []*store.Execution{oldRunning, recentDone} {
			if _, err := e.st.ExecutionGet(ctx, keep.ID); err != nil {
				t.Errorf("execution %d (%s) was deleted: %v", keep.ID, keep.State, err)
			}
		}
	})
}
