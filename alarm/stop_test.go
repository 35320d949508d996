package alarm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
				st, proxy := teststore.OpenProxied(t, dialect)
				arrived := make(chan struct{}, 16)
				hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
					arrived <- struct{}{}
					<-r.Context().Done()
				}))
				defer hook.Close()
				xs := failedWithAlarms(t, st, hook.URL, 2*parallel)
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
