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
	mu.Lock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 2; i < len(starts); i++ {
		// Slots are a second apart; a run acquired when already due starts a claim's round
		// trip after its slot, and a held one starts at its slot.
		if gap := starts[i].Sub(starts[i-2]); gap < time.Second-25*time.Millisecond {
			t.Errorf("runs %d and %d started %v apart: 3 in a second under a quota of 2", i-2, i, gap)
		}
	}
	mu.Unlock()
	if n := e.srv.sched.Engine().Stats().QuotaDelayed.Load(); n != 3 {
		t.Errorf("quota-delayed fires = %d, want 3", n)
	}
}
