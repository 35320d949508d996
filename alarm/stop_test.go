package alarm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestSenderStopBounded: Stop while alarms are being delivered to a webhook that does not
// answer. With the database reachable the alarms go back to pending; with it cut off (every
// byte dropped, nothing closed) Stop still returns within recordTimeout. It used to put the
// alarms back one by one, 10 s each on a context nothing canceled: 20 s and more here.
func TestSenderStopBounded(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		for _, cut := range []bool{false, true} {
			name := dialect + "/reachable"
			if cut {
				name = dialect + "/cut"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				dsn, proxy := testdb.Proxied(t, dialect)
				st := teststore.OpenDSN(t, dsn)
				arrived := make(chan struct{}, 16)
				hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
					arrived <- struct{}{}
					<-r.Context().Done()
				}))
				defer hook.Close()
				job := &store.Job{Group: "g", Name: "j", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
					Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook.URL}}
				if err := st.JobInsert(ctx, job); err != nil {
					t.Fatal(err)
				}
				var xs []*store.Execution
				for i := range 2 * parallel {
					xs = append(xs, &store.Execution{JobID: job.ID, TriggerID: 1, ScheduledAt: int64(i + 1), FiredAt: 1,
						Cause: store.CauseSchedule, State: store.ExecFailed, AlarmState: store.AlarmPending})
				}
				if _, err := st.ExecutionsInsert(ctx, xs); err != nil {
					t.Fatal(err)
				}
				s, err := New(Config{Store: st, Interval: time.Hour, Timeout: time.Hour, HTTPClient: &http.Client{}})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				s.Wake()
				for range parallel {
					<-arrived
				}
				if cut {
					if err := proxy.Cut(); err != nil {
						t.Fatal(err)
					}
				}
				began := time.Now()
				s.Stop()
				if took, limit := time.Since(began), recordTimeout+time.Second; took > limit {
					t.Fatalf("Stop took %v, want at most %v", took, limit)
				}
				if cut {
					return
				}
				for _, x := range xs {
					got, err := st.ExecutionGet(ctx, x.ID)
					if err != nil || got.AlarmState != store.AlarmPending {
						t.Errorf("execution %d: alarm %v (%v) after Stop, want pending", x.ID, got.AlarmState, err)
					}
				}
			})
		}
	}
}
