package alarm

import (
	"context"
	"strconv"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestResendAbandoned: an alarm a node claimed an hour ago and never recorded (the node died
// mid-delivery) is sent again, with its idempotency key; one claimed a moment ago is another
// sweep's, still delivering, and is left alone.
func TestResendAbandoned(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			hook, heard := keyHook(t)
			xs := failedWithAlarms(t, st, hook, 2)
			abandoned, fresh := xs[0], xs[1]
			if won, err := st.ExecutionsSetAlarm(ctx, []int64{abandoned.ID, fresh.ID}, store.AlarmPending, store.AlarmSending); err != nil || len(won) != 2 {
				t.Fatalf("claim the alarms: %v, %v", won, err)
			}
			if _, err := st.DB().ExecContext(ctx, "UPDATE executions SET alarm_claimed_at = alarm_claimed_at - 3600000 WHERE id = "+
				itoa(abandoned.ID)); err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Sweep(ctx)
			if err != nil || res != (Result{Sent: 1}) {
				t.Fatalf("Sweep = %+v, %v; want the abandoned alarm sent", res, err)
			}
			if keys := heard(); len(keys) != 1 || keys[0] != "sundial-execution-"+itoa(abandoned.ID) {
				t.Errorf("webhook requests with keys %q, want one for execution %d", keys, abandoned.ID)
			}
			for x, want := range map[*store.Execution]store.AlarmState{abandoned: store.AlarmSent, fresh: store.AlarmSending} {
				got, err := st.ExecutionGet(ctx, x.ID)
				if err != nil || got.AlarmState != want {
					t.Errorf("execution %d: alarm %v (%v), want %v", x.ID, got.AlarmState, err, want)
				}
			}
		})
	}
}

// failedWithAlarms stores a job alarming target and n failed executions of it, their alarms
// pending.
func failedWithAlarms(t *testing.T, st store.Store, target string, n int) []*store.Execution {
	t.Helper()
	ctx := context.Background()
	job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
		Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{target}}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	var xs []*store.Execution
	for i := range n {
		xs = append(xs, &store.Execution{JobID: job.ID, TriggerID: 1, ScheduledAt: int64(i + 1), FiredAt: 1,
			Cause: store.CauseSchedule, State: store.ExecFailed, AlarmState: store.AlarmPending})
	}
	if _, err := st.ExecutionsInsert(ctx, xs); err != nil {
		t.Fatal(err)
	}
	return xs
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
