//go:build race

package engine

// raceEnabled is true when the tests run under the race detector, which slows the pure-Go
// SQLite driver tenfold: the real-time load tests scale their load down (CI also runs them
// without it at full load).
const raceEnabled = true
