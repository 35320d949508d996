// Package teststore opens the real, migrated stores tests run on: a fresh database of a
// dialect from internal/testdb, through sqlstore, closed when the test ends.
package teststore

import (
	"context"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// Open opens a fresh, migrated database of the dialect, closed when t ends.
func Open(t testing.TB, dialect string) *sqlstore.Store {
	t.Helper()
	return OpenDSN(t, testdb.DSN(t, dialect))
}

// OpenProxied opens a fresh, migrated database of the dialect (postgres or mysql) reached
// through a proxy the test can cut (testdb.Proxied), closed when t ends.
func OpenProxied(t testing.TB, dialect string) (*sqlstore.Store, *testdb.Proxy) {
	t.Helper()
	dsn, proxy := testdb.Proxied(t, dialect)
	return OpenDSN(t, dsn), proxy
}

// OpenDSN opens and migrates the database at dsn, closed when t ends.
func OpenDSN(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", dsn, err)
	}
	return st
}
