package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/store/storetest"
)

// TestStore runs the conformance suite on every dialect, each test on a fresh database.
func TestStore(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) store.Store { return openMigrated(t, testdb.DSN(t, dialect)) })
		})
	}
}

// TestMySQLWithoutReturning runs the suite on the MySQL 8 paths (no INSERT ... RETURNING),
// which a MariaDB server can run too.
func TestMySQLWithoutReturning(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openMigrated(t, testdb.DSN(t, "mysql"), sqlstore.WithoutReturning())
	})
}

// TestLogLineCap checks the per-execution cap, which storetest cannot configure.
func TestLogLineCap(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "cap.db"), sqlstore.WithLogLineCap(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lines := []store.LogLine{{Line: 1}, {Line: 2}, {Line: 3}, {Line: 4}, {Line: 5}}
	n, err := s.ExecutionLogAppend(ctx, 1, lines)
	if err != nil || n != 3 {
		t.Fatalf("appended %d, %v; want 3 lines under the cap", n, err)
	}
	got, err := s.ExecutionLogList(ctx, 1, 0, 10)
	if err != nil || len(got) != 3 || got[2].Line != 3 {
		t.Fatalf("stored %+v, %v", got, err)
	}
}

// TestMigrateTwice checks that Migrate is idempotent.
func TestMigrateTwice(t *testing.T) {
	s := openMigrated(t, filepath.Join(t.TempDir(), "twice.db"))
	if err := s.(*sqlstore.Store).Migrate(context.Background()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
}

func TestOpenBadDSN(t *testing.T) {
	_, err := sqlstore.Open(context.Background(), "mysql://not a dsn")
	if err == nil {
		t.Fatal("Open accepted a malformed MySQL DSN")
	}
}

func openMigrated(t *testing.T, dsn string, opts ...sqlstore.Option) store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMigrationMovesLiveExecutions checks migration 00005 on a database with executions in
// every phase: the live ones move to executions_live with their ids, the ended ones stay, and
// new executions take ids above every old one.
func TestMigrationMovesLiveExecutions(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, err := sqlstore.Open(ctx, testdb.DSN(t, dialect))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.MigrateTo(ctx, 3); err != nil {
				t.Fatal(err)
			}
			states := []store.ExecutionState{store.ExecPending, store.ExecAcquired, store.ExecRunning, store.ExecSucceeded, store.ExecFailed}
			for i, st := range states {
				_, err := s.DB().ExecContext(ctx, rebind(dialect, "INSERT INTO executions (id, job_id, trigger_id, scheduled_at, cause, node, state,"+
					" trigger_msg, handle_msg, data) VALUES (?, 1, 7, ?, 'schedule', 'old-node', ?, '', '', '')"), 100+i, 1000+i, string(st))
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for i, st := range states {
				x, err := s.ExecutionGet(ctx, int64(100+i))
				if err != nil {
					t.Fatalf("execution %d (%s) after the migration: %v", 100+i, st, err)
				}
				if x.State != st || x.ScheduledAt != int64(1000+i) {
					t.Errorf("execution %d: got %s at %d, want %s at %d", x.ID, x.State, x.ScheduledAt, st, 1000+i)
				}
				if st == store.ExecPending && x.Node != "" {
					t.Errorf("pending execution kept node %q", x.Node)
				}
			}
			due, err := s.ExecutionsLockDuePending(ctx, 5000, 10)
			if err != nil || len(due) != 1 || due[0].ID != 100 {
				t.Fatalf("due pending after the migration: %v, %v; want execution 100", due, err)
			}
			fresh := &store.Execution{JobID: 1, ScheduledAt: 9000, Cause: store.CauseManual}
			if _, err := s.ExecutionsInsert(ctx, []*store.Execution{fresh}); err != nil {
				t.Fatal(err)
			}
			if fresh.ID <= 104 {
				t.Fatalf("a new execution got id %d, which an old one may hold (old ones go up to 104)", fresh.ID)
			}
			// A fire key still live is a duplicate.
			dups, err := s.ExecutionsInsert(ctx, []*store.Execution{{JobID: 1, TriggerID: 7, ScheduledAt: 1002, Cause: store.CauseSchedule}})
			if err != nil || len(dups) != 1 {
				t.Fatalf("re-inserting a live fire: dups %v, %v; want it refused", dups, err)
			}
		})
	}
}

func rebind(dialect, q string) string {
	if dialect != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestMigrationRenamesOverlapPolicies checks migration 00028: jobs stored with the old
// policy names (serial, discard, replace) read back under the new ones, allow stays.
func TestMigrationRenamesOverlapPolicies(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, err := sqlstore.Open(ctx, testdb.DSN(t, dialect))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.MigrateTo(ctx, 27); err != nil {
				t.Fatal(err)
			}
			want := map[string]store.ConcurrencyPolicy{"serial": store.ConcurrencyBufferAll, "discard": store.ConcurrencySkip,
				"replace": store.ConcurrencyTerminate, "allow": store.ConcurrencyAllow}
			for old := range want {
				if _, err := s.DB().ExecContext(ctx, rebind(dialect, "INSERT INTO jobs (group_name, name, description, target_kind, handler, params, data, concurrency,"+
					" alarm_targets, child_job_ids, created_at, updated_at) VALUES ('g', ?, '', 'local', 'noop', '', '', ?, '', '', 1, 1)"), old, old); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for old, now := range want {
				j, err := s.JobGetByKey(ctx, "g", old)
				if err != nil {
					t.Fatal(err)
				}
				if j.Concurrency != now || j.MaxConcurrent != 0 {
					t.Errorf("job stored with %s reads %s (max %d), want %s", old, j.Concurrency, j.MaxConcurrent, now)
				}
			}
		})
	}
}

// TestMigrationPartitionsHistory checks migration 00039: the history's rows survive the move
// into day partitions (recent days get one, old ones the default partition), ids keep coming
// from one sequence above theirs, and an ended fire's key still refuses a twin.
func TestMigrationPartitionsHistory(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, err := sqlstore.Open(ctx, testdb.DSN(t, dialect))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.MigrateTo(ctx, 35); err != nil {
				t.Fatal(err)
			}
			const day = int64(24 * time.Hour / time.Millisecond)
			now := time.Now().UnixMilli()
			at := []int64{now - 200*day, now - 10*day, now}
			for i, sched := range at {
				_, err := s.DB().ExecContext(ctx, rebind(dialect, "INSERT INTO executions (id, job_id, trigger_id, scheduled_at, fired_at, cause, state,"+
					" trigger_msg, handle_msg, data, params) VALUES (?, 1, 7, ?, ?, 'schedule', 'succeeded', '', '', '', '')"), 500+i, sched, sched)
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for i, sched := range at {
				x, err := s.ExecutionGet(ctx, int64(500+i))
				if err != nil || x.ScheduledAt != sched {
					t.Fatalf("execution %d after the migration: %+v, %v", 500+i, x, err)
				}
			}
			ps, err := s.HistoryPartitions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			days := map[string]bool{}
			for _, p := range ps {
				days[p.Day] = true
			}
			dayOf := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }
			if dialect == "postgres" {
				for _, d := range []int64{now - 10*day, now, now + 7*day} {
					if !days[dayOf(d)] {
						t.Errorf("no partition for %s: %v", dayOf(d), days)
					}
				}
				if days[dayOf(now-200*day)] {
					t.Errorf("a partition for %s, older than 90 days", dayOf(now-200*day))
				}
			} else if len(ps) > 0 {
				t.Errorf("partitions on %s: %v", dialect, ps)
			}
			fresh := &store.Execution{JobID: 1, ScheduledAt: now, Cause: store.CauseManual}
			if _, err := s.ExecutionsInsert(ctx, []*store.Execution{fresh}); err != nil {
				t.Fatal(err)
			}
			// Elsewhere the history's ids come only from the live table's moves, which these
			// rows, written straight into the history, did not make.
			if dialect == "postgres" && fresh.ID <= 502 {
				t.Fatalf("a new execution got id %d, which an old one holds (old ones go up to 502)", fresh.ID)
			}
			dups, err := s.ExecutionsInsert(ctx, []*store.Execution{{JobID: 1, TriggerID: 7, ScheduledAt: at[1], Cause: store.CauseSchedule}})
			if err != nil || len(dups) != 1 {
				t.Fatalf("re-inserting an ended fire: dups %v, %v; want it refused", dups, err)
			}
		})
	}
}
