package sqlstore

import (
	"context"
	"fmt"
	"slices"
)

// FireQuotaTake runs take on the fire-rate states of apps under their rows' locks and stores
// what it returns, in one transaction (run again if the database broke a deadlock). Missing
// rows are made first, each in its own statement: made inside the locking transaction, two
// nodes making the same row would deadlock on MariaDB's gap locks. Rows are locked in app
// order, so nodes locking overlapping apps never deadlock.
func (e *executor) FireQuotaTake(ctx context.Context, apps []string, take func(states map[string]string) map[string]string) error {
	apps = slices.Clone(apps)
	slices.Sort(apps)
	apps = slices.Compact(apps)
	pre, post := e.d().insertIgnore()
	for _, app := range apps {
		if _, err := e.exec(ctx, pre+"fire_quota (app, state) VALUES (?, '')"+post, app); err != nil {
			return fmt.Errorf("sqlstore: fire quota of app %q: %w", app, err)
		}
	}
	in, args := inList(apps)
	return e.retryDeadlock(ctx, func(e *executor) error {
		rows, err := e.query(ctx, "SELECT app, state FROM fire_quota WHERE app IN "+in+" ORDER BY app"+e.d().lock(), args...)
		if err != nil {
			return fmt.Errorf("sqlstore: lock the fire quota of apps %q: %w", apps, err)
		}
		states := make(map[string]string, len(apps))
		for rows.Next() {
			var app, state string
			if err := rows.Scan(&app, &state); err != nil {
				rows.Close()
				return err
			}
			states[app] = state
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for app, state := range take(states) {
			if _, err := e.exec(ctx, "UPDATE fire_quota SET state = ? WHERE app = ?", state, app); err != nil {
				return fmt.Errorf("sqlstore: set the fire quota of app %q: %w", app, err)
			}
		}
		return nil
	})
}
