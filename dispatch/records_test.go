package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// batchTap counts the batches written and holds the first until released.
type batchTap struct {
	store.Store
	mu      sync.Mutex
	sizes   []int
	first   chan struct{} // closed when the first batch is being written
	release chan struct{}
}

func (b *batchTap) ExecutionsRecordDispatches(ctx context.Context, recs []store.DispatchRecord) ([]bool, error) {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(recs))
	n := len(b.sizes)
	b.mu.Unlock()
	if n == 1 {
		close(b.first)
		<-b.release
	}
	return b.Store.ExecutionsRecordDispatches(ctx, recs)
}

// TestRecordsShareTransactions checks the group commit of dispatch records: while one batch
// is written, the records of the fires that come meanwhile queue and go in the next batch,
// one transaction for all of them; each gets its own compare-and-set's outcome; a waiter
// that leaves does not strand the others; and the queue ends empty.
func TestRecordsShareTransactions(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			own, other := store.Owner{Node: "n", Incarnation: "i"}, store.Owner{Node: "n", Incarnation: "gone"}
			const n = 40
			xs := make([]*store.Execution, n)
			for i := range xs {
				xs[i] = &store.Execution{JobID: 1, TriggerID: 1, ScheduledAt: int64(i + 1), Cause: store.CauseSchedule,
					Node: own.Node, Incarnation: own.Incarnation, State: store.ExecRunning}
			}
			if _, err := st.ExecutionsInsert(ctx, xs); err != nil {
				t.Fatal(err)
			}
			tap := &batchTap{Store: st, first: make(chan struct{}), release: make(chan struct{})}
			r := &records{st: tap}
			queued := make(chan int, 2*n)
			r.queuedHook = func(n int) { queued <- n }
			left := make(chan struct{})
			r.leftHook = func() { close(left) }

			type out struct {
				ok  bool
				err error
			}
			outs := make([]out, n+1)
			var wg sync.WaitGroup
			write := func(i int, ctx context.Context, rec store.DispatchRecord) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := r.write(ctx, rec)
					outs[i] = out{ok, err}
				}()
			}
			send := func(i int, o store.Owner) store.DispatchRecord {
				return store.DispatchRecord{Owner: o, ID: xs[i].ID, Address: "http://x:1", Message: fmt.Sprint("sent ", i)}
			}
			write(0, ctx, send(0, own))
			<-tap.first // the first fire writes its record alone, and is held there
			<-queued
			// The rest queue meanwhile: one of another life (refused), and one whose waiter
			// leaves before its batch is written.
			leaving, leave := context.WithCancel(ctx)
			for i := 1; i < n; i++ {
				o, c := own, ctx
				switch i {
				case 7:
					o = other
				case 1:
					c = leaving
				}
				write(i, c, send(i, o))
				<-queued
			}
			leave()
			<-left
			// An acceptance of the first, queued behind its send, goes with the rest.
			write(n, ctx, store.DispatchRecord{Owner: own, ID: xs[0].ID, Accepted: true})
			<-queued
			close(tap.release)
			wg.Wait()

			if fmt.Sprint(tap.sizes) != fmt.Sprint([]int{1, n}) {
				t.Fatalf("batches %v, want [1 %d]: the records queued meanwhile share one transaction", tap.sizes, n)
			}
			for i, o := range outs {
				switch {
				case i == 1:
					if !errors.Is(o.err, context.Canceled) {
						t.Errorf("record %d whose waiter left: %+v, want context.Canceled", i, o)
					}
				case i == 7:
					if o.ok || o.err != nil {
						t.Errorf("record %d of another life: %+v, want not applied", i, o)
					}
				case !o.ok || o.err != nil:
					t.Errorf("record %d: %+v, want applied", i, o)
				}
			}
			// The record whose waiter left was written all the same.
			x, err := st.ExecutionGet(ctx, xs[1].ID)
			if err != nil || x.TriggerMsg != "sent 1" {
				t.Errorf("record of the waiter that left: %+v, %v", x, err)
			}
			if x, err := st.ExecutionGet(ctx, xs[0].ID); err != nil || x.TriggerCode != store.DispatchAccepted {
				t.Errorf("accepted run: %+v, %v", x, err)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.writing || len(r.queued) != 0 {
				t.Errorf("after the writes: writing %v, %d queued", r.writing, len(r.queued))
			}
		})
	}
}

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
