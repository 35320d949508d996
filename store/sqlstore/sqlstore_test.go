package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/store/storetest"
)

func TestSQLite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openMigrated(t, "sqlite://"+filepath.Join(t.TempDir(), "sundial.db"))
	})
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	dsn := serverDSN(t, "SUNDIAL_TEST_POSTGRES")
	admin := openAdmin(t, "pgx", dsn)
	storetest.Run(t, func(t *testing.T) store.Store {
		// A schema per test, named on the search path, so the suite's tests run in parallel.
		schema := "sundial_" + randomName()
		exec(t, admin, "CREATE SCHEMA "+schema)
		t.Cleanup(func() { exec(t, admin, "DROP SCHEMA "+schema+" CASCADE") })
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return openMigrated(t, dsn+sep+"search_path="+schema)
	})
}

func TestMySQL(t *testing.T) {
	t.Parallel()
	testMySQL(t)
}

// TestMySQLWithoutReturning runs the suite on the MySQL 8 paths (no INSERT ... RETURNING),
// which a MariaDB server can run too.
func TestMySQLWithoutReturning(t *testing.T) {
	t.Parallel()
	testMySQL(t, sqlstore.WithoutReturning())
}

func testMySQL(t *testing.T, opts ...sqlstore.Option) {
	dsn := serverDSN(t, "SUNDIAL_TEST_MYSQL")
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql://"))
	if err != nil {
		t.Fatalf("SUNDIAL_TEST_MYSQL: %v", err)
	}
	admin := openAdmin(t, "mysql", cfg.FormatDSN())
	storetest.Run(t, func(t *testing.T) store.Store {
		// A database per test, so the suite's tests run in parallel.
		db := "sundial_" + randomName()
		exec(t, admin, "CREATE DATABASE "+db)
		t.Cleanup(func() { exec(t, admin, "DROP DATABASE "+db) })
		c := cfg.Clone()
		c.DBName = db
		return openMigrated(t, "mysql://"+c.FormatDSN(), opts...)
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

// serverDSN returns the DSN in env, skipping the test when it is unset, unless CI=true:
// there the database must be tested.
func serverDSN(t *testing.T, env string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the store suite against every database", env)
		}
		t.Skipf("set %s to run the store suite against this database", env)
	}
	return dsn
}

func openAdmin(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	return db
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

func exec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
