// Package leaktest is the one goleak setup of Sundial's tests: each package that starts
// goroutines fails its tests when one they started still runs at the end (a Stop or Close
// that returns before its goroutines end is a bug), with one list of the exceptions that are
// not Sundial's. Only tests import it.
package leaktest

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// Known are the goroutines a test may leave behind, each with its reason.
var Known = []goleak.Option{
	// toxiproxy (the TCP proxy of the database-cut tests) can leave a toxic's pipe goroutine
	// blocked on a channel send after its proxy stopped.
	goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
	// pgx closes a connection whose query was canceled by sending PostgreSQL a cancel request
	// from a goroutine of its own, bounded by its own 15 s deadline; with the database cut off
	// (the database-cut tests) its dial outlives the test by up to that long.
	goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn.(*PgConn).asyncClose.func1"),
}

// VerifyTestMain runs the package's tests, then fails them if a goroutine outlives them
// that Known and opts do not name.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(m, slices.Concat(Known, opts)...)
}
