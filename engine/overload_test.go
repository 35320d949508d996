package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// slowRoundsStore is the real store, except that each acquisition round holds its transaction
// (with the due triggers locked) until the test lets it go, as rounds do back to back under
// overload, and the heartbeat waits until the test lets it start.
type slowRoundsStore struct {
	store.Store
	t       *testing.T
	inRound chan struct{} // a round holds its transaction
	release chan struct{} // one value, or closed: rounds may end
	beatGo  chan struct{} // closed: heartbeats may start
	beats   chan error    // each heartbeat's outcome
}

func (s *slowRoundsStore) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &slowRoundTx{Tx: tx, s: s, priority: store.PriorityOf(ctx)}, nil
}

func (s *slowRoundsStore) NodeHeartbeat(ctx context.Context, o store.Owner, name string) (*store.Node, error) {
	select {
	case <-s.beatGo:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	n, err := s.Store.NodeHeartbeat(ctx, o, name)
	s.beats <- err
	return n, err
}

type slowRoundTx struct {
	store.Tx
	s        *slowRoundsStore
	priority store.Priority // the Begin's
}

func (t *slowRoundTx) TriggersLockDue(ctx context.Context, dueBefore int64, limit int) ([]*store.Trigger, error) {
	if t.priority != store.PriorityDeferred {
		t.s.t.Errorf("an acquisition round began at priority %d, want deferred (%d)", t.priority, store.PriorityDeferred)
	}
	rows, err := t.Tx.TriggersLockDue(ctx, dueBefore, limit)
	t.s.inRound <- struct{}{}
	select {
	case <-t.s.release:
	case <-ctx.Done():
	}
	return rows, err
}

// TestHeartbeatNotBehindAcquisitions: while acquisition rounds hold their transactions back to
// back, as under overload, the node's heartbeat still goes through, so its fence holds and
// the leader does not count it dead. On PostgreSQL and MariaDB it goes while both of the
// node's rounds hold theirs. SQLite has one writer: there the heartbeat waits for the round
// in progress, and goes before the next round, already waiting for the database when the
// heartbeat began. Before the store's gate, SQLite's one connection went to a random waiter,
// and the heartbeat waited up to 9.5 s behind rounds under overload.
//
// The engine's clock never moves: the heartbeat the test waits for is the one a node sends
// when it starts (held back until the rounds are under way), and no poll is due.
func TestHeartbeatNotBehindAcquisitions(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		queued := make(chan store.Priority, 1<<10)
		var opts []sqlstore.Option
		if dialect == "sqlite" {
			opts = append(opts, sqlstore.WithQueueWatch(func(p store.Priority) {
				select {
				case queued <- p:
				default:
				}
			}))
		}
		ctx := context.Background()
		real, err := sqlstore.Open(ctx, testdb.DSN(t, dialect), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { real.Close() })
		if err := real.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		st := &slowRoundsStore{Store: real, t: t, inRound: make(chan struct{}, 16), release: make(chan struct{}),
			beatGo: make(chan struct{}), beats: make(chan error, 16)}
		// Ten fires due and rounds of one: each round is full, and its acquirer begins the next
		// at once, as under overload.
		job := insertJob(t, real, "due", nil)
		clk := clock.NewFake(time.Now())
		for i := range 10 {
			insertTrigger(t, real, job, fmt.Sprintf("due%d", i), schedule.Simple{Interval: time.Hour}, clk.Now().Add(-time.Second), nil)
		}

		// SQLite runs one round at a time: one acquirer, and the test's own transaction at the
		// rounds' priority stands for the next round, waiting for the database before the
		// heartbeat does.
		acquirers := 2
		if dialect == "sqlite" {
			acquirers = 1
		}
		e := newEngine(t, st, newRecorder(), "n1", clk, func(c *Config) { c.Acquirers, c.BatchSize = acquirers, 1 })
		startEngine(t, e)
		t.Cleanup(func() { close(st.release) }) // before the engine stops (cleanups run last first)

		waitFor(t, "an acquisition round holding its transaction", st.inRound, 1)
		beat := st.beats
		if dialect == "sqlite" {
			// The next round: once it has the database, the heartbeat must have gone already;
			// had it queued behind, it could not go while this holds the database.
			next := make(chan error, 1)
			beat = next
			go func() {
				tx, err := real.Begin(store.WithPriority(ctx, store.PriorityDeferred))
				if err != nil {
					next <- err
					return
				}
				defer tx.Rollback()
				select {
				case err = <-st.beats:
				case <-time.After(20 * time.Second):
					err = errors.New("the next round holds the database while the heartbeat still waits")
				}
				next <- err
			}()
			waitForPriority(t, queued, store.PriorityDeferred, "the next round waiting for the database")
			close(st.beatGo)
			waitForPriority(t, queued, store.PriorityUrgent, "the heartbeat waiting for the database")
			st.release <- struct{}{} // the round in progress ends
		} else {
			waitFor(t, "both acquirers' rounds holding their transactions", st.inRound, 1)
			close(st.beatGo)
		}
		if err := waitFor(t, "the heartbeat", beat, 1)[0]; err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	})
}

// waitForPriority reads the store's queue watch until a caller of priority p queued.
func waitForPriority(t *testing.T, queued <-chan store.Priority, p store.Priority, what string) {
	t.Helper()
	for {
		if waitFor(t, what, queued, 1)[0] == p {
			return
		}
	}
}
