package sqlstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// queueIn starts a caller of g that waits for its turn at priority p, logs name when it gets
// it and leaves at once; it returns when the caller is queued (g's watch has seen it).
func queueIn(g *gate, queued <-chan store.Priority, p store.Priority, name string, log *[]string, mu *sync.Mutex, done *sync.WaitGroup) {
	done.Add(1)
	go func() {
		defer done.Done()
		if err := g.enter(context.Background(), p); err != nil {
			panic(err)
		}
		mu.Lock()
		*log = append(*log, name)
		mu.Unlock()
		g.leave()
	}()
	<-queued
}

// TestGateOrder: the urgent go first, the normal in their order, and a deferred caller after
// the normal ones, but not after more than deferAfter of them.
func TestGateOrder(t *testing.T) {
	queued := make(chan store.Priority, 16)
	g := &gate{watch: func(p store.Priority) { queued <- p }}
	if err := g.enter(context.Background(), store.PriorityNormal); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		log  []string
		done sync.WaitGroup
	)
	for _, c := range []struct {
		p    store.Priority
		name string
	}{
		{store.PriorityDeferred, "acquire1"},
		{store.PriorityNormal, "n1"},
		{store.PriorityNormal, "n2"},
		{store.PriorityUrgent, "beat"},
		{store.PriorityNormal, "n3"},
		{store.PriorityDeferred, "acquire2"},
		{store.PriorityNormal, "n4"},
		{store.PriorityNormal, "n5"},
		{store.PriorityUrgent, "lease"},
		{store.PriorityNormal, "n6"},
	} {
		queueIn(g, queued, c.p, c.name, &log, &mu, &done)
	}
	g.leave()
	done.Wait()
	want := []string{"beat", "lease", "n1", "n2", "n3", "n4", "acquire1", "n5", "n6", "acquire2"}
	if !slices.Equal(log, want) {
		t.Errorf("turns %v, want %v", log, want)
	}
	// Free again: the next caller does not queue.
	if err := g.enter(context.Background(), store.PriorityDeferred); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-queued:
		t.Errorf("a caller of a free gate queued (priority %d)", p)
	default:
	}
	g.leave()
}

// TestGateCanceledWaiter: a caller whose context ends while it waits leaves the queue without
// taking a turn, and the gate passes to the next.
func TestGateCanceledWaiter(t *testing.T) {
	queued := make(chan store.Priority, 4)
	g := &gate{watch: func(p store.Priority) { queued <- p }}
	if err := g.enter(context.Background(), store.PriorityNormal); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- g.enter(ctx, store.PriorityUrgent) }()
	<-queued
	next := make(chan error, 1)
	go func() { next <- g.enter(context.Background(), store.PriorityDeferred) }()
	<-queued
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled waiter: %v, want context.Canceled", err)
	}
	g.leave()
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	g.leave()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy {
		t.Error("the gate is still held after every caller left")
	}
}
