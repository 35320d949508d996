// Package store owns Sundial's persistent state: jobs, triggers, calendars, paused trigger
// groups, executions (live ones — pending, acquired, running — in executions_live, ended ones in
// the history table they move to when they end, in the same transaction), execution log lines,
// executor apps and their registered instances, users, tokens and sessions, scheduler nodes and
// named leases. It defines the domain types, the errors, and the Querier
// interface the engine and the API are written against; store/sqlstore implements it for
// SQLite, PostgreSQL and MySQL/MariaDB, and store/storetest is the conformance suite every
// implementation must pass.
//
// Conventions:
//   - Every time is an int64 count of Unix milliseconds in UTC; 0 means "none".
//   - Every ID is an int64 assigned by the database; 0 means "not stored yet" or "none".
//   - Every list is keyset-paginated: pass the last ID you saw as AfterID, never an offset.
//   - Operations on the engine's hot path take and return batches, so that one round trip
//     serves a whole batch of fires.
//   - Heartbeats and leases are measured with the database's clock, never the caller's, so
//     that nodes with skewed clocks agree on who is alive and who holds a lease.
//   - State changes that race with other nodes are compare-and-set: they name the state (and
//     where it matters the node) they move from and report which rows actually moved.
package store
