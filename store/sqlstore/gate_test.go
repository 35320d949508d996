package sqlstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestSQLiteHeartbeatFirst is TestNodeRowNotStarved's case on SQLite, which has one writer: the
// heartbeat cannot write while a transaction holds the database, but it waits for that one
// only, not for the acquisitions and other work queued before it. Its two statements go
// together (nobody takes the connection between them), then the lease renewal, then the
// other work, and the acquisition last. Before the gate, database/sql handed the one
// connection to a random waiter.
func TestSQLiteHeartbeatFirst(t *testing.T) {
	queued := make(chan store.Priority, 16)
	s := openMigrated(t, testdb.DSN(t, "sqlite"), sqlstore.WithQueueWatch(func(p store.Priority) { queued <- p }))
	ctx := context.Background()
	o := store.Owner{Node: "n", Incarnation: "1"}
	if _, err := s.NodeRegister(ctx, o, "host"); err != nil {
		t.Fatal(err)
	}
	holder, err := s.Begin(ctx) // a transaction in progress, as an acquisition round would be
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.NodeHold(ctx, o); err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		log  []string
		done sync.WaitGroup
	)
	note := func(what string) {
		mu.Lock()
		log = append(log, what)
		mu.Unlock()
	}
	// Each caller queues before the next starts, so their order of arrival is known.
	start := func(what string, want store.Priority, call func() error) {
		done.Add(1)
		go func() {
			defer done.Done()
			if err := call(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}()
		if p := <-queued; p != want {
			t.Fatalf("%s queued at priority %d, want %d", what, p, want)
		}
	}
	beat, lease := make(chan struct{}), make(chan struct{})
	// turn runs what as a transaction; first it waits for each of before to have returned.
	// Had one queued behind this transaction, it could not return while it runs: the wait
	// ends in failure after a generous bound instead.
	turn := func(what string, ctx context.Context, before ...chan struct{}) func() error {
		return func() error {
			tx, err := s.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			for _, b := range before {
				select {
				case <-b:
				case <-time.After(10 * time.Second):
					t.Errorf("%s holds the connection while the heartbeat or the lease still waits", what)
				}
			}
			note(what)
			if err := tx.NodeHold(ctx, o); err != nil {
				return err
			}
			return tx.Commit()
		}
	}
	start("acquisition", store.PriorityDeferred, turn("acquisition", store.WithPriority(ctx, store.PriorityDeferred)))
	start("claim", store.PriorityNormal, turn("claim", ctx, beat, lease))
	start("heartbeat", store.PriorityUrgent, func() error {
		defer close(beat)
		_, err := s.NodeHeartbeat(ctx, o, "host")
		return err
	})
	start("lease", store.PriorityUrgent, func() error {
		defer close(lease)
		_, held, err := s.LeaseAcquire(ctx, "leader", "n", 6*time.Second)
		if err == nil && !held {
			t.Error("the lease was not taken")
		}
		return err
	})
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	done.Wait()
	if want := []string{"claim", "acquisition"}; !slices.Equal(log, want) {
		t.Errorf("turns after the heartbeat and the lease: %v, want %v", log, want)
	}
}
