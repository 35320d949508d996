// Package chaos is Sundial's Jepsen-style fault suite: it runs a real cluster (three scheduler
// nodes and two executors as separate processes built from the product's code, on a PostgreSQL
// or MariaDB server the suite starts itself, reached through a TCP proxy), puts a steady load of
// triggers on it, injects faults (SIGKILL and restart of nodes with the same or a new node id,
// SIGSTOP past the node timeout, executor restarts on the same address, database restarts,
// network cuts; on PostgreSQL, with Options.Failover and in the long plan, a failover from a
// primary to its synchronous standby), and then checks every fire the schedules call for, and
// every node of the workflow load's runs (CheckWorkflows), against a ledger that the handlers
// append to outside the database.
//
// The checker (Check) is pure: it classifies each fire as once, retried, recovery re-run,
// double, zombie, missing, not run (recorded as failed or lost in the database) or stuck, and
// measures lateness and the time from each node kill to the release of the work that node
// held. Run drives one whole experiment and returns its Report.
//
// The short run is TestChaos (enabled by SUNDIAL_CHAOS=short); the long one is
// `go run ./internal/chaos/cmd/chaos` (docs/chaos.md).
package chaos
