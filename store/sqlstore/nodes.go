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

const nodeCols = "id, name, started_at, last_seen"

func scanNodes(rows *sql.Rows, err error) ([]*store.Node, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Node
	for rows.Next() {
		var n store.Node
		if err := rows.Scan(&n.ID, &n.Name, &n.StartedAt, &n.LastSeen); err != nil {
			return nil, err
		}
		out = append(out, &n)
	}
	return out, rows.Err()
}

// NodeHeartbeat upserts the node with last_seen = the database's now.
func (e *executor) NodeHeartbeat(ctx context.Context, id, name string) (*store.Node, error) {
	// The clock is read once, in a derived table: PostgreSQL's clock_timestamp() written twice
	// in the row gives two instants, and a new node's started_at and last_seen must be one.
	// (WHERE 1 = 1 lets SQLite tell the upsert clause from a join constraint.)
	_, err := e.exec(ctx, "INSERT INTO nodes ("+nodeCols+") SELECT ?, ?, t.now_ms, t.now_ms FROM (SELECT "+
		e.d().nowMillis()+" AS now_ms) t WHERE 1 = 1"+e.d().upsert("id", "name", "last_seen"), id, name)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: heartbeat of node %q: %w", id, err)
	}
	var n store.Node
	err = e.queryRow(ctx, "SELECT "+nodeCols+" FROM nodes WHERE id = ?", id).Scan(&n.ID, &n.Name, &n.StartedAt, &n.LastSeen)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: heartbeat of node %q: %w", id, err)
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

// NodeDelete forgets a node.
func (e *executor) NodeDelete(ctx context.Context, id string) error {
	res, err := e.exec(ctx, "DELETE FROM nodes WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("sqlstore: delete node %q: %w", id, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("node %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// LeaseAcquire takes, renews or fails to take the lease. The three statements run in one
// transaction so that the lease it reports is the one it wrote.
func (e *executor) LeaseAcquire(ctx context.Context, name, holder string, ttl time.Duration) (*store.Lease, bool, error) {
	if holder == "" {
		return nil, false, errors.New("sqlstore: lease holder must not be empty")
	}
	now := e.d().nowMillis()
	var l *store.Lease
	err := e.inTx(ctx, func(e *executor) error {
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
