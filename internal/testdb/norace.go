//go:build !race

package testdb

// RaceEnabled is true when the tests run under the race detector; see race.go.
const RaceEnabled = false
