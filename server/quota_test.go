package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
)

// TestAppFireQuotaThroughAPI: under a fire-rate quota of 2 per second, 5 runs of one app's
// job asked for at once through the API all run, two per second, none dropped; the metric
// counts the delayed ones.
func TestAppFireQuotaThroughAPI(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	done := make(chan struct{}, 8)
	e := newEnvOn(t, openStore(t, "sqlite"), func(c *Config) { c.Scheduler.Engine.AppFiresPerSecond = 2 }, func(s *Server) {
		s.Register("count", func(ctx context.Context) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			done <- struct{}{}
			return nil
		})
	})
	c := e.client()
	ctx := context.Background()
	j := must(c.CreateJob(ctx, api.JobRequest{Name: "q", Handler: "count"}))(t)
	asked := time.Now()
	for range 5 {
		must(c.RunJob(ctx, j.ID))(t)
	}
	for i := range 5 {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of 5 runs started: the quota dropped or stalled fires", i)
		}
	}
	// Every run was asked for after asked, so the quota's slots for the third and fifth are
	// at least one and two seconds after it, and a run never starts before its slot. (Real
	// starts after their slots depend on the machine's load, so nothing tighter is checked.)
	mu.Lock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i, min := range map[int]time.Duration{2: time.Second, 4: 2 * time.Second} {
		if d := starts[i].Sub(asked); d < min {
			t.Errorf("run %d started %v after the runs were asked for: under a quota of 2 per second, at least %v", i, d, min)
		}
	}
	mu.Unlock()
	if n := e.srv.sched.Engine().Stats().QuotaDelayed.Load(); n != 3 {
		t.Errorf("quota-delayed fires = %d, want 3", n)
	}
}
