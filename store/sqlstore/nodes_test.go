package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// holdCapForTest is the longest one of holdBackToBack's acquisitions lasts.
const holdCapForTest = 3 * time.Second

// holdBackToBack holds the life's node row the way a node's acquisitions do under overload:
// each transaction's NodeHold is taken before the previous transaction lets go, so some
// acquisition always holds the row. (Where a hold queues behind a waiting writer, as
// InnoDB's do, the previous one lets go after holdCap, as a real acquisition would end.)
// It returns a channel closed once the row is held, and the error that ended the chain: the
// first NodeHold refused.
func holdBackToBack(s store.Store, o store.Owner) (<-chan struct{}, <-chan error) {
	const holdCap = holdCapForTest
	out, first := make(chan error, 1), make(chan struct{})
	holding := first
	go func() {
		ctx := context.Background()
		var prev store.Tx
		for {
			tx, err := s.Begin(ctx)
			if err == nil {
				held := make(chan error, 1)
				go func() { held <- tx.NodeHold(ctx, o) }()
				select {
				case err = <-held:
				case <-time.After(holdCap):
					if prev != nil {
						_ = prev.Commit()
						prev = nil
					}
					err = <-held
				}
			}
			if prev != nil {
				_ = prev.Commit()
			}
			if err != nil {
				if tx != nil {
					_ = tx.Rollback()
				}
				out <- err
				return
			}
			if holding != nil {
				close(holding)
				holding = nil
			}
			prev = tx
		}
	}()
	return first, out
}

// TestNodeRowNotStarved: while a life's acquisitions hold its row back to back, its heartbeat
// goes through within a second, and a new life registering under the same node id completes;
// after that the old life can hold its row no more. The heartbeat used to write the row the
// acquisitions share-lock, and waited for them: under overload for seconds, until the node's
// fence lapsed and it fired nothing for a whole window.
func TestNodeRowNotStarved(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			s := openMigrated(t, testdb.DSN(t, dialect))
			ctx := context.Background()
			old := store.Owner{Node: "n", Incarnation: "old"}
			if _, err := s.NodeRegister(ctx, old, "host"); err != nil {
				t.Fatal(err)
			}
			holding, ended := holdBackToBack(s, old)
			<-holding

			hctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if _, err := s.NodeHeartbeat(hctx, old, "host"); err != nil {
				t.Fatalf("heartbeat behind back-to-back acquisitions: %v", err)
			}
			rctx, cancel := context.WithTimeout(ctx, 3*holdCapForTest)
			defer cancel()
			if _, err := s.NodeRegister(rctx, store.Owner{Node: "n", Incarnation: "new"}, "host"); err != nil {
				t.Fatalf("a new life of the node behind the old life's acquisitions: %v", err)
			}
			if err := <-ended; !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the old life's acquisitions ended with %v, want its node row not found", err)
			}
		})
	}
}

// TestIdleTransactionTimeout: every session of a PostgreSQL or MariaDB store carries the
// server-side timeout that ends a session left idle inside a transaction (what frees the rows a
// frozen node locked: engine.TestFrozenSessionDoesNotHoldRecovery shows the effect), unless
// the DSN sets its own.
func TestIdleTransactionTimeout(t *testing.T) {
	for _, c := range []struct {
		dialect, read, param string
		want, wantSet        string
	}{
		{"postgres", "SHOW idle_in_transaction_session_timeout", "idle_in_transaction_session_timeout=1500", "30s", "1500ms"},
		{"mysql", "SELECT @@session.idle_transaction_timeout", "idle_transaction_timeout=7", "30", "7"},
	} {
		t.Run(c.dialect, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.DSN(t, c.dialect)
			for dsn, want := range map[string]string{dsn: c.want, testdb.WithParam(dsn, c.param): c.wantSet} {
				s, err := sqlstore.Open(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				var got string
				// Two sessions at once: the setting is every session's, not only the first's.
				tx, err := s.DB().Begin()
				if err != nil {
					t.Fatal(err)
				}
				if err := s.DB().QueryRow(c.read).Scan(&got); err != nil || got != want {
					t.Errorf("%s on %s: %q (%v), want %q", c.read, dsn, got, err, want)
				}
				_ = tx.Rollback()
				s.Close()
			}
		})
	}
}
