package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// Every time in this file comes from the database clock (nowMillis), never the caller's: a
// node with a skewed clock must neither look dead nor keep a dead peer or an expired lease
// alive.

const nodeCols = "id, incarnation, name, started_at, last_seen"

func scanNodes(rows *sql.Rows, err error) ([]*store.Node, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Node
	for rows.Next() {
		var n store.Node
		if err := rows.Scan(&n.ID, &n.Incarnation, &n.Name, &n.StartedAt, &n.LastSeen); err != nil {
			return nil, err
		}
		out = append(out, &n)
	}
	return out, rows.Err()
}

// NodeRegister inserts the node's row for the life o, replacing an earlier life's. The life
// row (node_lives, which acquisitions hold) changes hands first: that waits for the earlier
// life's acquisitions in flight, and any it begins after finds its life gone. InnoDB queues
// new holds behind the waiting writer, so back-to-back acquisitions of a life still running
// cannot starve the new one; PostgreSQL does not, hence its two steps (below).
func (e *executor) NodeRegister(ctx context.Context, o store.Owner, name string) (*store.Node, error) {
	err := e.inTx(ctx, func(e *executor) error {
		if _, err := e.exec(ctx, "INSERT INTO node_lives (id, incarnation) VALUES (?, ?)"+e.d().upsert("id", "incarnation"),
			o.Node, o.Incarnation); err != nil {
			return err
		}
		// The clock is read once, in a derived table: PostgreSQL's clock_timestamp() written
		// twice in the row gives two instants, and a node's started_at and last_seen must be
		// one. (WHERE 1 = 1 lets SQLite tell the upsert clause from a join constraint.)
		_, err := e.exec(ctx, "INSERT INTO nodes ("+nodeCols+") SELECT ?, ?, ?, t.now_ms, t.now_ms FROM (SELECT "+
			e.d().nowMillis()+" AS now_ms) t WHERE 1 = 1"+e.d().upsert("id", "incarnation", "name", "started_at", "last_seen"),
			o.Node, o.Incarnation, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: register node %v: %w", o, err)
	}
	if e.d().kind == postgres {
		// On PostgreSQL acquisitions hold the life's row FOR KEY SHARE, which the change of
		// incarnation above (not a key) did not wait for, and new shares jump a waiting
		// writer. Now that no acquisition of an earlier life can begin, wait for those in
		// flight: this lock can only wait for them, never starve behind new ones.
		var one int
		if err := e.queryRow(ctx, "SELECT 1 FROM node_lives WHERE id = ? FOR UPDATE", o.Node).Scan(&one); err != nil {
			return nil, fmt.Errorf("sqlstore: register node %v: wait for the acquisitions of its earlier life: %w", o, err)
		}
	}
	return e.nodeGet(ctx, o)
}

// NodeHeartbeat sets last_seen of the life o to the database's now. It never inserts: a row
// the leader deleted stays deleted, and the node learns that it was declared dead.
// On SQLite it goes ahead of the node's other work waiting for the one writer (urgently).
func (e *executor) NodeHeartbeat(ctx context.Context, o store.Owner, name string) (*store.Node, error) {
	var node *store.Node
	err := e.urgently(ctx, func(e *executor) error {
		res, err := e.exec(ctx, "UPDATE nodes SET name = ?, last_seen = "+e.d().nowMillis()+" WHERE id = ? AND incarnation = ?",
			name, o.Node, o.Incarnation)
		if err != nil {
			return fmt.Errorf("sqlstore: heartbeat of node %v: %w", o, err)
		}
		if n, err := affected(res); err != nil {
			return fmt.Errorf("sqlstore: heartbeat of node %v: %w", o, err)
		} else if n == 0 {
			return fmt.Errorf("node %v: %w", o, store.ErrNotFound)
		}
		node, err = e.nodeGet(ctx, o)
		return err
	})
	return node, err
}

// NodeHold takes a shared lock on the life's row in node_lives (SQLite's transactions hold
// the whole database's write lock already). The heartbeat writes the nodes row, not this
// one, so it never waits for an acquisition.
func (e *executor) NodeHold(ctx context.Context, o store.Owner) error {
	lock := ""
	switch e.d().kind {
	case postgres:
		lock = " FOR KEY SHARE" // see NodeRegister
	case mysqlKind:
		lock = " LOCK IN SHARE MODE"
	}
	var one int
	err := e.queryRow(ctx, "SELECT 1 FROM node_lives WHERE id = ? AND incarnation = ?"+lock, o.Node, o.Incarnation).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("node %v: %w", o, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: hold node %v: %w", o, err)
	}
	return nil
}

func (e *executor) nodeGet(ctx context.Context, o store.Owner) (*store.Node, error) {
	var n store.Node
	err := e.queryRow(ctx, "SELECT "+nodeCols+" FROM nodes WHERE id = ? AND incarnation = ?", o.Node, o.Incarnation).
		Scan(&n.ID, &n.Incarnation, &n.Name, &n.StartedAt, &n.LastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("node %v: %w", o, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read node %v: %w", o, err)
	}
	return &n, nil
}

// NodeList lists every node.
func (e *executor) NodeList(ctx context.Context) ([]*store.Node, error) {
	ns, err := scanNodes(e.query(ctx, "SELECT "+nodeCols+" FROM nodes ORDER BY id"))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list nodes: %w", err)
	}
	return ns, nil
}

// NodesStale lists nodes silent for longer than olderThan.
func (e *executor) NodesStale(ctx context.Context, olderThan time.Duration) ([]*store.Node, error) {
	ns, err := scanNodes(e.query(ctx, "SELECT "+nodeCols+" FROM nodes WHERE last_seen < "+e.d().nowMillis()+" - ? ORDER BY id",
		olderThan.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: stale nodes: %w", err)
	}
	return ns, nil
}

// NodeDelete forgets the life o.
func (e *executor) NodeDelete(ctx context.Context, o store.Owner) error {
	var n int64
	err := e.inTx(ctx, func(e *executor) error {
		res, err := e.exec(ctx, "DELETE FROM nodes WHERE id = ? AND incarnation = ?", o.Node, o.Incarnation)
		if err != nil {
			return err
		}
		if n, err = affected(res); err != nil || n == 0 {
			return err
		}
		return e.dropLife(ctx, o)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: delete node %v: %w", o, err)
	}
	if n == 0 {
		return fmt.Errorf("node %v: %w", o, store.ErrNotFound)
	}
	return nil
}

// NodeDeleteStale forgets the life o if it is still silent. The DELETE locks the nodes row, so
// a heartbeat racing it either lands first (and the node stays) or finds the row gone; then
// the life's row goes, once the life's acquisitions in flight are over.
func (e *executor) NodeDeleteStale(ctx context.Context, o store.Owner, olderThan time.Duration) (bool, error) {
	var n int64
	err := e.inTx(ctx, func(e *executor) error {
		res, err := e.exec(ctx, "DELETE FROM nodes WHERE id = ? AND incarnation = ? AND last_seen < "+e.d().nowMillis()+" - ?",
			o.Node, o.Incarnation, olderThan.Milliseconds())
		if err != nil {
			return err
		}
		if n, err = affected(res); err != nil || n == 0 {
			return err
		}
		return e.dropLife(ctx, o)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: delete stale node %v: %w", o, err)
	}
	return n > 0, nil
}

// dropLife deletes the life's row in node_lives, waiting for the acquisitions that hold it.
func (e *executor) dropLife(ctx context.Context, o store.Owner) error {
	_, err := e.exec(ctx, "DELETE FROM node_lives WHERE id = ? AND incarnation = ?", o.Node, o.Incarnation)
	return err
}

// LeaseAcquire takes, renews or fails to take the lease. The three statements run in one
// transaction so that the lease it reports is the one it wrote. On SQLite it goes ahead of
// the node's other work waiting for the one writer: a lease renewed late is lost.
func (e *executor) LeaseAcquire(ctx context.Context, name, holder string, ttl time.Duration) (*store.Lease, bool, error) {
	if holder == "" {
		return nil, false, errors.New("sqlstore: lease holder must not be empty")
	}
	now := e.d().nowMillis()
	var l *store.Lease
	err := e.inTx(store.WithPriority(ctx, store.PriorityUrgent), func(e *executor) error {
		pre, post := e.d().insertIgnore()
		res, err := e.exec(ctx, pre+"leases (name, holder, token, expires_at) VALUES (?, ?, 1, "+now+" + ?)"+post,
			name, holder, ttl.Milliseconds())
		if err != nil {
			return err
		}
		if n, err := affected(res); err != nil {
			return err
		} else if n == 0 {
			// Token is assigned before holder: MySQL evaluates SET left to right with
			// the new values.
			_, err = e.exec(ctx, "UPDATE leases SET token = CASE WHEN holder = ? THEN token ELSE token + 1 END, holder = ?, "+
				"expires_at = "+now+" + ? WHERE name = ? AND (holder = ? OR expires_at <= "+now+")",
				holder, holder, ttl.Milliseconds(), name, holder)
			if err != nil {
				return err
			}
		}
		l, err = e.LeaseGet(ctx, name)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: acquire lease %q for %q: %w", name, holder, err)
	}
	return l, l.Holder == holder, nil
}

// LeaseRelease expires the lease if holder holds it. The row stays, so the token keeps
// growing across holders.
func (e *executor) LeaseRelease(ctx context.Context, name, holder string) (bool, error) {
	res, err := e.exec(ctx, "UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ? AND expires_at > "+e.d().nowMillis(), name, holder)
	if err != nil {
		return false, fmt.Errorf("sqlstore: release lease %q by %q: %w", name, holder, err)
	}
	n, err := affected(res)
	return n > 0, err
}

// LeaseGet returns the lease as stored; an expired lease is returned too.
func (e *executor) LeaseGet(ctx context.Context, name string) (*store.Lease, error) {
	var l store.Lease
	err := e.queryRow(ctx, "SELECT name, holder, token, expires_at FROM leases WHERE name = ?", name).
		Scan(&l.Name, &l.Holder, &l.Token, &l.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("lease %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get lease %q: %w", name, err)
	}
	return &l, nil
}
