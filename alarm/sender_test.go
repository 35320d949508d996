package alarm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/leaktest"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// TestSenderRetriesOnItsClock: a webhook that fails twice is tried again after the backoff
// and then twice the backoff, on the sender's clock, and the alarm is recorded sent; a
// started sender stops when told, and twice is harmless.
func TestSenderRetriesOnItsClock(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	var mu sync.Mutex
	var at []time.Duration
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, clk.Now().Sub(start))
		if len(at) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hook.Close()

	job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
		Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook.URL}}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	x := &store.Execution{JobID: job.ID, ScheduledAt: 1, FiredAt: 1, Cause: store.CauseAPI, State: store.ExecFailed,
		AlarmState: store.AlarmPending}
	if _, err := st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: st, Clock: clk, Backoff: time.Second, Attempts: 3, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() {
		res, err := s.Sweep(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		clk.WaitForTimers(1, nil) // the pause before the next try
		clk.Advance(d)
	}
	if res := <-done; res != (Result{Sent: 1}) {
		t.Fatalf("Sweep = %+v, want one sent", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 || at[0] != 0 || at[1] != time.Second || at[2] != 3*time.Second {
		t.Errorf("webhook tried at %v, want 0s, 1s, 3s", at)
	}
	got, err := st.ExecutionGet(ctx, x.ID)
	if err != nil || got.AlarmState != store.AlarmSent {
		t.Errorf("alarm state %v (%v), want sent", got.AlarmState, err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
}
