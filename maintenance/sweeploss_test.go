package maintenance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// failingLoss is a store whose transactions fail to lose runs on an executor while fail is
// set: the database going away between the sweep's statements.
type failingLoss struct {
	store.Store
	fail atomic.Bool
}

func (s *failingLoss) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &failingLossTx{Tx: tx, s: s}, nil
}

type failingLossTx struct {
	store.Tx
	s *failingLoss
}

var errLossCut = errors.New("the database went away")

func (tx *failingLossTx) ExecutionsLoseOnExecutor(ctx context.Context, app, address string) ([]*store.Execution, error) {
	if tx.s.fail.Load() {
		return nil, errLossCut
	}
	return tx.Tx.ExecutionsLoseOnExecutor(ctx, app, address)
}

// TestExecutorSweepForgetsOnlyWithTheLoss: an executor is silent, with a run handed to it. The
// sweep's loss of that run fails (the database went away between its statements): the
// executor must still be registered, or nothing would ever judge its address again (a push
// executor that restarts on another port never beats there) and the run would stay running
// for ever, as a chaos run found. The next sweep loses the run and forgets the executor.
func TestExecutorSweepForgetsOnlyWithTheLoss(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := &failingLoss{Store: teststore.Open(t, dialect)}
			e := startedEngine(t, st, make(ledger, 16), 100*time.Millisecond, time.Second)

			const heartbeat = 100 * time.Millisecond
			const addr = "http://10.0.0.2:9999"
			if err := st.RegistryBeat(ctx, "billing", addr, "i1", "1", []string{"h"}); err != nil {
				t.Fatal(err)
			}
			run := runningOn(t, st, "remote", addr, 0)
			waitUntil(t, "the executor to be silent past three beats", func() bool {
				live, err := st.RegistryLive(ctx, "billing", 3*heartbeat)
				return err == nil && len(live) == 0
			})
			waitUntil(t, "the leader to judge silences", func() bool { j, ok := e.JudgeSilence(3*heartbeat, heartbeat); return ok && j.From == 0 })
			sweep := ExecutorSweep(e, st, heartbeat, func(string) bool { return false }, nil, nil, testLogger(t))
			registered := func() bool {
				t.Helper()
				all, err := st.RegistryLive(ctx, "billing", anyAge)
				if err != nil {
					t.Fatal(err)
				}
				return len(all) == 1
			}
			state := func() store.ExecutionState {
				t.Helper()
				x, err := st.ExecutionGet(ctx, run.ID)
				if err != nil {
					t.Fatal(err)
				}
				return x.State
			}

			st.fail.Store(true)
			if err := sweep.run(ctx); !errors.Is(err, errLossCut) {
				t.Fatalf("sweep with the loss cut: %v, want the cut's error (the fault did not take effect)", err)
			}
			if !registered() || state() != store.ExecRunning {
				t.Fatalf("after a sweep whose loss failed: registered %v, run %s; want the executor still registered and its run running", registered(), state())
			}

			st.fail.Store(false)
			if err := sweep.run(ctx); err != nil {
				t.Fatal(err)
			}
			if registered() || state() != store.ExecLost {
				t.Fatalf("after the next sweep: registered %v, run %s; want the executor forgotten and its run lost", registered(), state())
			}
		})
	}
}
