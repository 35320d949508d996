package alarm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestPausedAlarm: the failure that paused its job (pause on failure: the job paused by
// store.PausedByFailures at that failure's finish, in the transaction of its result) is told
// once as job.paused, with the pause note and the count, whatever the alarm policy (here a
// threshold of 5 holds the other failures back). A failure of a job a person paused is an
// ordinary failure.
func TestPausedAlarm(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
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
				got, keys = append(got, ev), append(keys, r.Header.Get("Idempotency-Key"))
			}))
			defer hook.Close()
			job := &store.Job{Group: "g", Name: "nightly", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
				Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook.URL}, AlarmPolicy: store.AlarmPolicy{Threshold: 5},
				PauseAfterFailures: 2}
			if err := st.JobInsert(ctx, job); err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Store: st, Attempts: 1, Interval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			fail := func(i int64) *store.Execution {
				x := &store.Execution{JobID: job.ID, ScheduledAt: i, FiredAt: i, FinishedAt: 1000 * i, Cause: store.CauseAPI,
					State: store.ExecFailed, HandleMsg: "disk full", AlarmState: store.AlarmPending}
				if _, err := st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
					t.Fatal(err)
				}
				return x
			}
			sweep := func(want Result) {
				t.Helper()
				if res, err := s.Sweep(ctx); err != nil || res != want {
					t.Fatalf("sweep: %+v, %v; want %+v", res, err, want)
				}
			}
			fail(1)
			sweep(Result{Dropped: 1}) // below the threshold
			note := "paused after 2 failures in a row (pause on failure); the last was execution 2"
			x2 := fail(2)
			if err := st.JobSetPause(ctx, job.ID, store.PausedByFailures, note, x2.FinishedAt); err != nil {
				t.Fatal(err)
			}
			sweep(Result{Sent: 1})
			sweep(Result{}) // told once
			mu.Lock()
			if len(got) != 1 || got[0].Event != EventPaused || got[0].Reason != note || got[0].Failures != 2 ||
				got[0].ExecutionID != x2.ID || got[0].State != "failed" || keys[0] != "sundial-execution-"+itoa(x2.ID) {
				t.Errorf("the hook got %+v (keys %v); want one job.paused for execution %d with the note and 2 failures", got, keys, x2.ID)
			}
			mu.Unlock()
			m := messageOf(Event{Event: EventPaused, JobGroup: "g", JobName: "nightly", JobID: job.ID, Failures: 2, Reason: note})
			if m.Title != "Sundial: job g/nightly paused after 2 failures" || !strings.Contains(strings.Join(m.Lines, "\n"), note) {
				t.Errorf("message %+v", m)
			}

			// A person's pause: the failure at its instant is an ordinary one.
			x3 := fail(3)
			if err := st.JobSetPause(ctx, job.ID, "alice", "maintenance", x3.FinishedAt); err != nil {
				t.Fatal(err)
			}
			sweep(Result{Dropped: 1})
		})
	}
}
