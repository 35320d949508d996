// Package schedule computes when triggers fire, with the semantics of Quartz 2.3:
// Quartz-syntax cron expressions, simple (fixed interval) triggers, calendar-interval and
// daily-time-interval triggers, exclusion calendars, and the misfire instructions of every
// trigger kind.
//
// The package is pure: it does no I/O and never reads the clock. Every function takes the
// instants it needs ("now" included), so the engine and the tests decide what time it is.
//
// Fire times are checked case by case against the real Quartz 2.3.2 (testdata/, replayed by
// internal/oraclecase's test). Where Quartz is plainly broken the package diverges
// deliberately: testdata/divergences.txt lists each such case under its reason, and that test
// pins the answer this package gives instead.
package schedule
