package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"

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
