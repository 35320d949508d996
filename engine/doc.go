// Package engine is Sundial's scheduling loop. Every node runs the same engine against a
// shared store; there is no master for firing.
//
// A round of acquisition locks a batch of due triggers (FOR UPDATE SKIP LOCKED, so nodes never
// wait on each other), applies misfire policies, inserts one execution row per fire and
// advances the triggers, all in one transaction: a fire is either owned by a live node or
// still due. Acquired fires wait in an in-memory heap and are released at their due
// millisecond; before any side effect the node moves them acquired → running with a
// compare-and-set, so a fire taken from a node that was presumed dead never runs twice.
// Results are written back in batches. Nodes heartbeat with the database's clock and contend
// for the leader lease; Leadership tells listeners (package maintenance) when the node leads.
//
// The job policy lives here and nowhere else: what follows a failed, lost or manually retried
// run (retries with their backoff, recovery of a dead node's runs, pending alarms), through
// the operations the leader's duties and the HTTP layer call (RecoverDeadNodes,
// LoseOnExecutor, CheckExecutorBeat, Retry, CompleteRemote, Kill). Runs handed to executors
// live as long as their executor's heartbeat holds them, and a result that comes after its run
// was declared lost is recorded late (executors.go).
package engine
