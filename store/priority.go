package store

import "context"

// Priority is how soon a store that writes one transaction at a time (SQLite: one writer for
// the file) serves a caller waiting for it. Stores that write in parallel ignore it.
type Priority int

const (
	// PriorityDeferred is work the node takes ahead of its need: acquisition rounds, which
	// under overload would otherwise keep the one writer busy taking fires the node cannot
	// start yet, while the claims that start the fires it holds wait. Served after the
	// waiting work of normal priority, but never passed over more than a few times in a row.
	PriorityDeferred Priority = iota - 1
	// PriorityNormal is every call not marked otherwise.
	PriorityNormal
	// PriorityUrgent is the writes the cluster judges a node alive by (its heartbeat, the
	// leader lease): served before any other waiting work, so they wait for at most the
	// transaction in progress. The store marks them itself.
	PriorityUrgent
)

type priorityKey struct{}

// WithPriority returns ctx carrying p for the store calls made with it.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf returns the priority ctx carries (PriorityNormal when none).
func PriorityOf(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}
