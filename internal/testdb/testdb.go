// Package testdb gives every test its own empty database on each of Sundial's SQL dialects,
// so suites run in parallel against real SQLite, PostgreSQL and MariaDB/MySQL servers.
//
// PostgreSQL and MySQL come from DSNs in the environment (SUNDIAL_TEST_POSTGRES,
// SUNDIAL_TEST_MYSQL). Without one the test is skipped with a message saying what to set —
// unless CI=true, where a missing database fails the test.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Dialects are the dialect names DSN accepts, in the order suites usually run them.
var Dialects = []string{"sqlite", "postgres", "mysql"}

// EnvVar names the environment variable holding the server DSN of a dialect.
func EnvVar(dialect string) string {
	switch dialect {
	case "postgres":
		return "SUNDIAL_TEST_POSTGRES"
	case "mysql":
		return "SUNDIAL_TEST_MYSQL"
	}
	return ""
}

// DSN returns the DSN of a fresh, empty database of the dialect, dropped when t ends.
func DSN(t testing.TB, dialect string) string {
	t.Helper()
	if dialect == "sqlite" {
		return filepath.Join(t.TempDir(), "sundial.db")
	}
	env := EnvVar(dialect)
	if env == "" {
		t.Fatalf("testdb: unknown dialect %q", dialect)
	}
	base := os.Getenv(env)
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testdb: %s is not set, and CI=true makes the %s suite mandatory", env, dialect)
		}
		t.Skipf("testdb: set %s to run this test on %s (e.g. %s)", env, dialect, example(dialect))
	}
	name := "sundial_t_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dsn string
	var err error
	switch dialect {
	case "postgres":
		dsn, err = createPostgres(ctx, t, base, name)
	case "mysql":
		dsn, err = createMySQL(ctx, t, base, name)
	}
	if err != nil {
		t.Fatalf("testdb: create %s database %s: %v", dialect, name, err)
	}
	return dsn
}

func example(dialect string) string {
	if dialect == "postgres" {
		return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	return "mysql://root@tcp(127.0.0.1:3306)/test"
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createPostgres makes a schema rather than a database: much cheaper, and the DSN's
// search_path puts every table in it.
func createPostgres(ctx context.Context, t testing.TB, base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if err := createDropped(ctx, t, "pgx", base, "CREATE SCHEMA "+name, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func createMySQL(ctx context.Context, t testing.TB, base, name string) (string, error) {
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(base, "mysql://"))
	if err != nil {
		return "", err
	}
	if err := createDropped(ctx, t, "mysql", cfg.FormatDSN(), "CREATE DATABASE "+name, "DROP DATABASE IF EXISTS "+name); err != nil {
		return "", err
	}
	cfg.DBName = name
	return "mysql://" + cfg.FormatDSN(), nil
}

// createDropped runs create on the server and drop when t ends.
func createDropped(ctx context.Context, t testing.TB, driver, dsn, create, drop string) error {
	admin, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	if _, err := admin.ExecContext(ctx, create); err != nil {
		admin.Close()
		return err
	}
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, drop); err != nil {
			t.Logf("testdb: %s: %v", drop, err)
		}
	})
	return nil
}
