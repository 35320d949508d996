//go:build race

package testdb

// RaceEnabled is true when the tests run under the race detector, which slows the pure-Go
// SQLite driver about tenfold: real-time load tests scale their load down with it (CI also
// runs them without the detector at full load).
const RaceEnabled = true
