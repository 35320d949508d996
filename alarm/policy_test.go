package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestStep: the policy's decisions for runs of failures (F) and successes (S), each a
// minute after the last unless the case says otherwise.
func TestStep(t *testing.T) {
	const min = int64(time.Minute / time.Millisecond)
	for _, tc := range []struct {
		name   string
		policy store.AlarmPolicy
		runs   string  // F fails, S succeeds
		gaps   []int64 // minutes before each run (default 1)
		want   string  // A alert, R recover, . quiet
	}{
		{name: "default: every failure", runs: "FFSF", want: "AA.A"},
		{name: "3 in a row", policy: store.AlarmPolicy{Threshold: 3}, runs: "FFFFFF", want: "..A..A"},
		{name: "a success breaks the row", policy: store.AlarmPolicy{Threshold: 3}, runs: "FFSFFF", want: ".....A"},
		{name: "recovery after an alarm only", policy: store.AlarmPolicy{Threshold: 2, Recovery: true}, runs: "FSFFSS", want: "...AR."},
		{name: "no recovery notice unless asked", policy: store.AlarmPolicy{Threshold: 2}, runs: "FFS", want: ".A."},
		{name: "3 within 10 minutes", policy: store.AlarmPolicy{Threshold: 3, WindowMs: 10 * min}, runs: "FSFSF", want: "....A"},
		{name: "window slides past old failures", policy: store.AlarmPolicy{Threshold: 2, WindowMs: 10 * min},
			runs: "FFF", gaps: []int64{1, 11, 5}, want: "..A"},
		{name: "silence holds back repeats", policy: store.AlarmPolicy{SilenceMs: 30 * min}, runs: "FFFF",
			gaps: []int64{1, 10, 10, 11}, want: "A..A"},
		{name: "silence spans a recovery", policy: store.AlarmPolicy{SilenceMs: 30 * min, Recovery: true}, runs: "FSF",
			gaps: []int64{1, 1, 1}, want: "AR."},
		{name: "silenced crossing alarms after the window", policy: store.AlarmPolicy{Threshold: 2, SilenceMs: 30 * min},
			runs: "FFFFF", gaps: []int64{1, 1, 1, 1, 30}, want: ".A..A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
			var st store.AlarmStateRow
			var got strings.Builder
			for i, r := range tc.runs {
				gap := int64(1)
				if i < len(tc.gaps) {
					gap = tc.gaps[i]
				}
				clk.Advance(time.Duration(gap) * time.Minute)
				var d Decision
				st, d = Step(tc.policy, st, int64(i+1), r == 'F', clk.Now().UnixMilli())
				got.WriteByte(map[Decision]byte{Quiet: '.', Alert: 'A', Recover: 'R'}[d])
				// The same execution again (delivered again after its node died) gets the
				// same decision and changes nothing.
				again, d2 := Step(tc.policy, st, int64(i+1), r == 'F', clk.Now().UnixMilli())
				if d2 != d || again.Failures != st.Failures || again.Open != st.Open || len(again.FailedAt) != len(st.FailedAt) {
					t.Errorf("run %d again: %s and %+v, want %s and %+v", i+1, d2, again, d, st)
				}
			}
			if got.String() != tc.want {
				t.Errorf("%s: decisions %s, want %s", tc.runs, got.String(), tc.want)
			}
		})
	}
}

// keyHook is a webhook that keeps the Idempotency-Key of each request; keys returns them.
func keyHook(t *testing.T) (url string, keys func() []string) {
	var mu sync.Mutex
	var got []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("Idempotency-Key"))
	}))
	t.Cleanup(hook.Close)
	return hook.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestCheckPolicy: bad policies are refused naming the field.
func TestCheckPolicy(t *testing.T) {
	for _, tc := range []struct {
		p     store.AlarmPolicy
		field string
	}{
		{store.AlarmPolicy{Threshold: 3, WindowMs: 60000, SilenceMs: 60000, Recovery: true}, ""},
		{store.AlarmPolicy{Threshold: -1}, "threshold"},
		{store.AlarmPolicy{WindowMs: 60000}, "window_ms"},
		{store.AlarmPolicy{Threshold: 2, WindowMs: -1}, "window_ms"},
		{store.AlarmPolicy{SilenceMs: -5}, "silence_ms"},
	} {
		if field, _ := CheckPolicy(tc.p); field != tc.field {
			t.Errorf("CheckPolicy(%+v) names %q, want %q", tc.p, field, tc.field)
		}
	}
}

// TestPolicyHoldsAcrossSenders: the count of a job's failures lives in the database, so a
// threshold of 3 in a row crossed across three senders (a restart or a new leader after each
// failure) alarms once, at the third; a fourth failure handed to two senders at once (leaders
// that overlap) is decided once; the success that follows is told as a recovery, once.
func TestPolicyHoldsAcrossSenders(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			hook, events := keyHook(t)
			job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
				Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook},
				AlarmPolicy: store.AlarmPolicy{Threshold: 3, Recovery: true}}
			if err := st.JobInsert(ctx, job); err != nil {
				t.Fatal(err)
			}
			clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
			sender := func() *Sender {
				s, err := New(Config{Store: st, Clock: clk, Attempts: 1, Interval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			finish := func(i int, state store.ExecutionState) {
				x := &store.Execution{JobID: job.ID, ScheduledAt: int64(i), FiredAt: int64(i), FinishedAt: int64(1000 * i),
					Cause: store.CauseAPI, State: state, AlarmState: store.AlarmPending}
				if _, err := st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
					t.Fatal(err)
				}
			}
			var total Result
			for i := 1; i <= 3; i++ {
				finish(i, store.ExecFailed)
				res, err := sender().Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				total.Sent, total.Dropped = total.Sent+res.Sent, total.Dropped+res.Dropped
			}
			if total != (Result{Sent: 1, Dropped: 2}) {
				t.Errorf("three failures over three senders: %+v, want one alarm and two held back", total)
			}
			finish(4, store.ExecFailed)
			var wg sync.WaitGroup
			results := make([]Result, 2)
			for i := range results {
				wg.Go(func() {
					res, err := sender().Sweep(ctx)
					if err != nil {
						t.Error(err)
					}
					results[i] = res
				})
			}
			wg.Wait()
			if n := results[0].Dropped + results[1].Dropped + results[0].Sent + results[1].Sent; n != 1 {
				t.Errorf("the fourth failure was decided %d times by two senders (%+v), want once", n, results)
			}
			finish(5, store.ExecSucceeded)
			if res, err := sender().Sweep(ctx); err != nil || res != (Result{Sent: 1}) {
				t.Errorf("success after the alarm: %+v, %v; want a recovery sent", res, err)
			}
			if got := events(); len(got) != 2 {
				t.Errorf("the hook heard %v, want the alarm of the third failure and the recovery", got)
			}
		})
	}
}

// TestRaise: Raise tells every target of the job at once with the reason, whatever the
// job's policy (a threshold no failure crossed yet), and says when a target was not told.
func TestRaise(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	var mu sync.Mutex
	var got []Event
	var keys []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		keys = append(keys, r.Header.Get("Idempotency-Key"))
	}))
	defer hook.Close()
	job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
		Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook.URL}, AlarmPolicy: store.AlarmPolicy{Threshold: 5}}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: st, Attempts: 1, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Raise(ctx, job.ID, 17, "paused itself"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 1 || got[0].Event != EventRaised || got[0].Reason != "paused itself" || got[0].JobID != job.ID ||
		keys[0] != fmt.Sprintf("sundial-job-%d-raised-17", job.ID) {
		t.Errorf("the hook got %+v with keys %v", got, keys)
	}
	mu.Unlock()
	job.AlarmTargets = []string{"http://127.0.0.1:1/closed"}
	if err := st.JobUpdate(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := s.Raise(ctx, job.ID, 0, "again"); err == nil {
		t.Error("Raise to a target that refuses connections: no error")
	}
}

// TestReclaimedAlarmKeepsItsDecision: a node that decided an alarm (its count is in the
// job's row) and died before telling anyone leaves it sending; the sweep that reclaims it
// delivers it with the decision taken then, and the failure is not counted a second time.
func TestReclaimedAlarmKeepsItsDecision(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			hook, heard := keyHook(t)
			policy := store.AlarmPolicy{Threshold: 2}
			job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
				Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook}, AlarmPolicy: policy}
			if err := st.JobInsert(ctx, job); err != nil {
				t.Fatal(err)
			}
			var xs []*store.Execution
			for i := 1; i <= 2; i++ {
				xs = append(xs, &store.Execution{JobID: job.ID, ScheduledAt: int64(i), FiredAt: int64(i), FinishedAt: int64(1000 * i),
					Cause: store.CauseAPI, State: store.ExecFailed, AlarmState: store.AlarmPending})
			}
			if _, err := st.ExecutionsInsert(ctx, xs); err != nil {
				t.Fatal(err)
			}
			// The dead node's work: both claimed, both decided (the second crossed the
			// threshold), nobody told.
			if won, err := st.ExecutionsSetAlarm(ctx, []int64{xs[0].ID, xs[1].ID}, store.AlarmPending, store.AlarmSending); err != nil || len(won) != 2 {
				t.Fatalf("claim: %v, %v", won, err)
			}
			row, err := st.JobAlarmGet(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			state := *row
			for _, x := range xs {
				state, _ = Step(policy, state, x.ID, true, x.FinishedAt)
			}
			if err := st.JobAlarmPut(ctx, &state); err != nil {
				t.Fatal(err)
			}
			if _, err := st.DB().ExecContext(ctx, "UPDATE executions SET alarm_claimed_at = alarm_claimed_at - 3600000"); err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Store: st, Attempts: 1, Interval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Sweep(ctx)
			if err != nil || res != (Result{Sent: 1, Dropped: 1}) {
				t.Fatalf("Sweep = %+v, %v; want the crossing sent and the first failure held back", res, err)
			}
			if keys := heard(); len(keys) != 1 || keys[0] != "sundial-execution-"+itoa(xs[1].ID) {
				t.Errorf("the hook heard %v, want the second failure's alarm once", keys)
			}
			after, err := st.JobAlarmGet(ctx, job.ID)
			if err != nil || after.Version != state.Version || after.Failures != 0 || !after.Open {
				t.Errorf("the job's alarm row after the reclaim: %+v (%v), want it as the dead node left it", after, err)
			}
		})
	}
}
