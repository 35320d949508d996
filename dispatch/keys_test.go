package dispatch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// TestClusterKeySharedAcrossNodes: two nodes on one database that both need the cluster key
// at once (neither finds one) end with the same key, so an executor that registered with
// either takes the calls of both.
func TestClusterKeySharedAcrossNodes(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := testdb.DSN(t, dialect)
			a, b := teststore.OpenDSN(t, dsn), teststore.OpenDSN(t, dsn)
			nodes := []*Remote{NewRemote(Config{Store: a}), NewRemote(Config{Store: b})}
			keys := make([][]string, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, r := range nodes {
				wg.Go(func() { keys[i], errs[i] = r.ClusterKeys(context.Background()) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(keys[0]) != 1 || !slices.Equal(keys[0], keys[1]) {
				t.Fatalf("node keys %v and %v: want one key, the same", keys[0], keys[1])
			}
			stored, err := a.ClusterKeys(context.Background())
			if err != nil || len(stored) != 1 {
				t.Fatalf("stored keys %d (%v), want 1", len(stored), err)
			}
			// Each node signs with it: the executor given the key verifies both nodes' calls.
			v := execsign.NewVerifier(time.Now)
			if err := v.SetKeys(keys[0]); err != nil {
				t.Fatal(err)
			}
			for i, r := range nodes {
				s, err := r.keys.signer(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				req := httptest.NewRequest(http.MethodPost, "/beat", nil)
				if err := s.Sign(req, wire.PathBeat, nil, execsign.Target{App: "billing"}, time.Now()); err != nil {
					t.Fatal(err)
				}
				if _, err := v.Verify(req, wire.PathBeat, nil); err != nil {
					t.Fatalf("node %d's call: %v", i, err)
				}
			}
		})
	}
}

// TestRotateClusterKey: a rotation is published to executors at once (both keys) and signed
// with only once executors had time to learn it; a second rotation drops the first key.
func TestRotateClusterKey(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	fake := clock.NewFake(time.UnixMilli(1_732_230_000_000))
	r := NewRemote(Config{Store: st, Clock: fake, HeartbeatInterval: time.Second})
	first, err := r.keys.signer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Hour)
	second, err := RotateClusterKey(ctx, st, fake.Now())
	if err != nil || second.Generation != 2 {
		t.Fatalf("rotate: %+v %v, want generation 2", second, err)
	}
	fake.Advance(time.Second) // the node's cached keys expire
	pub, err := r.ClusterKeys(ctx)
	if err != nil || !slices.Equal(pub, []string{second.PublicKey, first.Public()}) {
		t.Fatalf("published after the rotation: %v %v, want the new key and the old", pub, err)
	}
	if s, _ := r.keys.signer(ctx); s.Public() != first.Public() {
		t.Fatal("a node signs with the new key before executors had time to learn it")
	}
	fake.Advance((LiveIntervals + 1) * time.Second)
	if s, _ := r.keys.signer(ctx); s.Public() != second.PublicKey {
		t.Fatal("a node still signs with the old key after the rotation settled")
	}
	third, err := RotateClusterKey(ctx, st, fake.Now())
	if err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Second)
	if pub, _ := r.ClusterKeys(ctx); !slices.Equal(pub, []string{third.PublicKey, second.PublicKey}) {
		t.Fatalf("published after a second rotation: %v, want the two newest only", pub)
	}
}

// TestManualAddressTiedToInstance: a run sent to a manual address is recorded for the
// executor instance that answers there (learned by a signed beat), so its results are taken
// from that process only; a manual address whose executor names no instance gets no run.
func TestManualAddressTiedToInstance(t *testing.T) {
	ctx := context.Background()
	fx := newRemoteFixture(t)
	if err := fx.st.AppPut(ctx, &store.App{Name: "billing", AddressMode: store.AddressManual, Addresses: []string{fx.exe.Address()}}); err != nil {
		t.Fatal(err)
	}
	r := NewRemote(Config{Store: fx.st})
	ex := fx.running(t, store.Owner{Node: "n"})
	if res := r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job}); !res.Async || res.Err != nil {
		t.Fatalf("dispatch to the manual address: %+v", res)
	}
	d, err := fx.st.ExecutionDispatchedTo(ctx, ex.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Instance != fx.exe.Instance() {
		t.Fatalf("the manual address's run is recorded for instance %q, want %q (the executor there)", d.Instance, fx.exe.Instance())
	}

	var runs atomic.Int32
	nameless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathRun {
			runs.Add(1)
		}
		w.Write([]byte(`{"accepted":true}`)) // names no instance
	}))
	t.Cleanup(nameless.Close)
	if err := fx.st.AppPut(ctx, &store.App{Name: "billing", AddressMode: store.AddressManual, Addresses: []string{nameless.URL}}); err != nil {
		t.Fatal(err)
	}
	r = NewRemote(Config{Store: fx.st})
	ex = fx.running(t, store.Owner{Node: "n"})
	if res := r.Dispatch(ctx, &engine.Fire{Execution: ex, Job: fx.job}); res.Async || res.Err == nil {
		t.Fatalf("dispatch to a manual address naming no instance: %+v, want a failure", res)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d runs sent to a manual address whose executor names no instance, want none", n)
	}
}
