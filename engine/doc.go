// Package engine is Sundial's scheduling loop. Every node runs the same engine against a
// shared store; there is no master for firing.
//
// A round of acquisition locks a batch of due triggers (FOR UPDATE SKIP LOCKED, so nodes never
// wait on each other), applies misfire policies, inserts one execution row per fire and
// advances the triggers, all in one transaction: a fire is either owned by a live node or
// still due. Acquired fires wait in an in-memory heap and are released at their due
// millisecond; before any side effect the node moves them acquired → running with a
// compare-and-set, so a fire taken from a node that was presumed dead never runs twice.
// Results are written back in batches. Nodes heartbeat with the database's clock; the
// leader (a lease) returns the work of dead nodes to the pool.
package engine
