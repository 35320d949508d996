package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/store"
)

// readTap counts the reads of apps and holds the first until released.
type readTap struct {
	store.Store
	reads   atomic.Int64
	first   chan struct{}
	again   chan struct{} // closed at the second read
	release chan struct{}
}

func (s *readTap) AppGet(ctx context.Context, name string) (*store.App, error) {
	switch s.reads.Add(1) {
	case 1:
		close(s.first)
		<-s.release
	case 2:
		close(s.again)
	}
	return s.Store.AppGet(ctx, name)
}

// TestInstancesReadOnceForABurst checks that the fires that find an app's cached executors
// stale while one of them reads the registry wait for that read instead of each reading:
// one read for the burst, and every fire gets its instance.
func TestInstancesReadOnceForABurst(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	if err := st.RegistryBeat(ctx, "billing", "http://10.0.0.5:9999", "i1", "", nil); err != nil {
		t.Fatal(err)
	}
	tap := &readTap{Store: st, first: make(chan struct{}), again: make(chan struct{}), release: make(chan struct{})}
	r := NewRemote(Config{Store: tap, Clock: clock.NewFake(time.Unix(1000, 0))})
	const n = 20
	waiting := make(chan struct{}, n)
	r.waitHook = func() { waiting <- struct{}{} }
	var wg sync.WaitGroup
	got := make([][]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _, errs[i] = r.addresses(ctx, "billing", "shell")
		}()
		if i == 0 {
			<-tap.first
		}
	}
	for range n - 1 {
		select {
		case <-waiting:
		case <-tap.again:
			close(tap.release)
			wg.Wait()
			t.Fatal("a fire read the app again while the first read was in flight")
		}
	}
	close(tap.release)
	wg.Wait()
	if n := tap.reads.Load(); n != 1 {
		t.Errorf("%d reads of the app for a burst of %d fires, want 1", n, n)
	}
	for i := range n {
		if errs[i] != nil || len(got[i]) != 1 || got[i][0] != "http://10.0.0.5:9999" {
			t.Errorf("fire %d: %v, %v", i, got[i], errs[i])
		}
	}
}
