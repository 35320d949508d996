// Package jobrun is the runtime a job's handler runs in, shared by the two places handlers
// run: in-process on a scheduler node (the root package, through the engine) and in an
// executor process (package executor). What must behave the same in both lives here, once:
//
//   - the concurrency policies of a job's runs (Tracker): allow, serial, discard, replace;
//   - the slog handler that turns a run's log records into its output lines (OutputHandler);
//   - the context accessors that hand a handler its run and its logger;
//   - a run's idempotency key (IdempotencyKey).
//
// It does no I/O and starts no goroutines.
package jobrun
