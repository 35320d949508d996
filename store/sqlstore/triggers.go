package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sundial-scheduler/sundial/store"
)

const triggerCols = "id, job_id, group_name, name, description, kind, spec, time_zone, start_at, end_at, " +
	"calendar_name, priority, misfire_policy, state, error_message, next_fire_at, prev_fire_at, times_fired, " +
	"version, created_at, updated_at, params, data, jitter_ms, dst_policy, catchup_window_ms, catchup, run_limit, zone_of, zones"

func scanTrigger(r rowScanner) (*store.Trigger, error) {
	var t store.Trigger
	var cal sql.NullString
	var data, zones string
	err := r.Scan(&t.ID, &t.JobID, &t.Group, &t.Name, &t.Description, &t.Kind, &t.Spec, &t.TimeZone,
		&t.StartAt, &t.EndAt, &cal, &t.Priority, &t.MisfirePolicy, &t.State, &t.ErrorMessage, &t.NextFireAt,
		&t.PrevFireAt, &t.TimesFired, &t.Version, &t.CreatedAt, &t.UpdatedAt, &t.Params, &data, &t.JitterMs, &t.DSTPolicy,
		&t.CatchUpWindow, &t.CatchUp, &t.RunLimit, &t.ZoneOf, &zones)
	t.CalendarName = cal.String
	if zones != "" {
		t.Zones = strings.Split(zones, ",")
	}
	if err == nil {
		err = decodeJSON(data, &t.Data)
	}
	return &t, err
}

func scanTriggers(rows *sql.Rows, err error) ([]*store.Trigger, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Trigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TriggerInsert stores t, paused if its group (or everything) is paused.
func (e *executor) TriggerInsert(ctx context.Context, t *store.Trigger) error {
	state := t.State
	if state == "" {
		state = store.TriggerWaiting
	}
	if state == store.TriggerWaiting {
		var n int
		err := e.queryRow(ctx, "SELECT COUNT(*) FROM paused_groups WHERE group_name IN (?, ?)", t.Group, store.PauseAllGroups).Scan(&n)
		if err != nil {
			return fmt.Errorf("sqlstore: insert trigger %q/%q: paused groups: %w", t.Group, t.Name, err)
		}
		if n > 0 {
			state = store.TriggerPaused
		}
	}
	prio := t.Priority
	if prio == 0 {
		prio = store.DefaultPriority
	}
	data, err := encodeJSON(t.Data, len(t.Data) == 0)
	if err != nil {
		return err
	}
	now := e.cfg.now()
	id, err := e.insertID(ctx, "INSERT INTO triggers ("+triggerCols[len("id, "):]+") VALUES "+placeholders(29),
		t.JobID, t.Group, t.Name, t.Description, string(t.Kind), t.Spec, t.TimeZone, t.StartAt, t.EndAt,
		nullString(t.CalendarName), prio, t.MisfirePolicy, string(state), t.ErrorMessage, t.NextFireAt,
		t.PrevFireAt, t.TimesFired, int64(1), now, now, t.Params, data, t.JitterMs, t.DSTPolicy, t.CatchUpWindow, t.CatchUp, t.RunLimit,
		t.ZoneOf, strings.Join(t.Zones, ","))
	if err != nil {
		switch {
		case isUniqueViolation(err):
			return &store.ExistsError{Kind: "trigger", Key: t.Group + "/" + t.Name}
		case isForeignKeyViolation(err):
			return fmt.Errorf("trigger %q/%q: job %d or calendar %q: %w", t.Group, t.Name, t.JobID, t.CalendarName, store.ErrNotFound)
		}
		return fmt.Errorf("sqlstore: insert trigger %q/%q: %w", t.Group, t.Name, err)
	}
	t.ID, t.State, t.Priority, t.Version, t.CreatedAt, t.UpdatedAt = id, state, prio, 1, now, now
	return nil
}

// TriggerGet returns the trigger id.
func (e *executor) TriggerGet(ctx context.Context, id int64) (*store.Trigger, error) {
	t, err := scanTrigger(e.queryRow(ctx, "SELECT "+triggerCols+" FROM triggers WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("trigger %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get trigger %d: %w", id, err)
	}
	return t, nil
}

// TriggerGetByKey returns the trigger named group/name.
func (e *executor) TriggerGetByKey(ctx context.Context, group, name string) (*store.Trigger, error) {
	t, err := scanTrigger(e.queryRow(ctx, "SELECT "+triggerCols+" FROM triggers WHERE group_name = ? AND name = ?", group, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("trigger %q/%q: %w", group, name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get trigger %q/%q: %w", group, name, err)
	}
	return t, nil
}

// TriggerList lists triggers by id.
func (e *executor) TriggerList(ctx context.Context, f store.TriggerFilter) ([]*store.Trigger, error) {
	q := "SELECT " + triggerCols + " FROM triggers WHERE id > ?"
	args := []any{f.AfterID}
	order := " ORDER BY id LIMIT ?"
	if f.ByNextFire {
		args[0], order = 0, " ORDER BY next_fire_at, id LIMIT ?"
		if f.State == store.TriggerWaiting && e.d().kind == sqlite {
			// The due index (next_fire_at over waiting triggers) serves this order; SQLite
			// uses a partial index only for a query that repeats its predicate.
			q += " AND state = 'waiting'"
		}
	}
	if f.JobID != 0 {
		q += " AND job_id = ?"
		args = append(args, f.JobID)
	}
	if len(f.JobIDs) > 0 {
		in, idArgs := inList(f.JobIDs)
		q += " AND job_id IN " + in
		args = append(args, idArgs...)
	}
	if f.Group != "" {
		q += " AND group_name = ?"
		args = append(args, f.Group)
	}
	switch {
	case f.ZoneOf != 0:
		q += " AND zone_of = ? AND zone_of <> 0" // <> 0: triggers_zone_of_idx holds only those
		args = append(args, f.ZoneOf)
	case !f.WithZoneRows:
		q += " AND zone_of = 0"
	}
	if f.State != "" {
		q += " AND state = ?"
		args = append(args, string(f.State))
	}
	if cond, scopeArgs := scopedJobsCond(f.Scope); cond != "" {
		q += cond
		args = append(args, scopeArgs...)
	}
	q += order
	args = append(args, limitOr(f.Limit))
	ts, err := scanTriggers(e.query(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list triggers: %w", err)
	}
	return ts, nil
}

// TriggerUpdate overwrites the trigger if t.Version is current.
func (e *executor) TriggerUpdate(ctx context.Context, t *store.Trigger) error {
	prio := t.Priority
	if prio == 0 {
		prio = store.DefaultPriority
	}
	data, err := encodeJSON(t.Data, len(t.Data) == 0)
	if err != nil {
		return err
	}
	now := e.cfg.now()
	res, err := e.exec(ctx, `UPDATE triggers SET job_id = ?, group_name = ?, name = ?, description = ?, kind = ?,
		spec = ?, time_zone = ?, start_at = ?, end_at = ?, calendar_name = ?, priority = ?, misfire_policy = ?,
		state = ?, error_message = ?, next_fire_at = ?, prev_fire_at = ?, times_fired = ?, params = ?, data = ?,
		jitter_ms = ?, dst_policy = ?, catchup_window_ms = ?, catchup = ?, run_limit = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?`,
		t.JobID, t.Group, t.Name, t.Description, string(t.Kind), t.Spec, t.TimeZone, t.StartAt, t.EndAt,
		nullString(t.CalendarName), prio, t.MisfirePolicy, string(t.State), t.ErrorMessage, t.NextFireAt,
		t.PrevFireAt, t.TimesFired, t.Params, data, t.JitterMs, t.DSTPolicy, t.CatchUpWindow, t.CatchUp, t.RunLimit, now, t.ID, t.Version)
	if err != nil {
		switch {
		case isUniqueViolation(err):
			return &store.ExistsError{Kind: "trigger", Key: t.Group + "/" + t.Name}
		case isForeignKeyViolation(err):
			return fmt.Errorf("trigger %q/%q: job %d or calendar %q: %w", t.Group, t.Name, t.JobID, t.CalendarName, store.ErrNotFound)
		}
		return fmt.Errorf("sqlstore: update trigger %d: %w", t.ID, err)
	}
	n, err := affected(res)
	if err != nil {
		return err
	}
	if n == 0 {
		var v int64
		err := e.queryRow(ctx, "SELECT version FROM triggers WHERE id = ?", t.ID).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("trigger %d: %w", t.ID, store.ErrNotFound)
		}
		return fmt.Errorf("trigger %d: version %d, stored %d: %w", t.ID, t.Version, v, store.ErrConflict)
	}
	t.Priority, t.Version, t.UpdatedAt = prio, t.Version+1, now
	return nil
}

// TriggerDelete deletes the trigger id.
func (e *executor) TriggerDelete(ctx context.Context, id int64) error {
	// A trigger's zone rows go with it (they are the same trigger in its other zones).
	if _, err := e.exec(ctx, "DELETE FROM triggers WHERE zone_of = ? AND zone_of <> 0", id); err != nil {
		return fmt.Errorf("sqlstore: delete trigger %d: zone rows: %w", id, err)
	}
	res, err := e.exec(ctx, "DELETE FROM triggers WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("sqlstore: delete trigger %d: %w", id, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("trigger %d: %w", id, store.ErrNotFound)
	}
	return nil
}

// selector turns sel into a WHERE condition on triggers.
func selector(sel store.TriggerSelector) (string, []any, error) {
	set := 0
	var cond string
	var args []any
	if sel.TriggerID != 0 {
		set++
		// A trigger's zone rows are paused and resumed with it.
		cond, args = "(id = ? OR (zone_of = ? AND zone_of <> 0))", []any{sel.TriggerID, sel.TriggerID}
	}
	if sel.JobID != 0 {
		set++
		cond, args = "job_id = ?", []any{sel.JobID}
	}
	if sel.Group != "" {
		set++
		cond, args = "group_name = ?", []any{sel.Group}
	}
	if sel.All {
		set++
		cond, args = "1 = 1", nil
	}
	if set != 1 {
		return "", nil, fmt.Errorf("sqlstore: trigger selector %+v must set exactly one field", sel)
	}
	return cond, args, nil
}

// TriggersPause pauses the selected waiting triggers, and remembers a paused group.
func (e *executor) TriggersPause(ctx context.Context, sel store.TriggerSelector) (int64, error) {
	return e.setTriggerStates(ctx, sel, store.TriggerWaiting, store.TriggerPaused)
}

// returnAcquiredFires hands fires that a node acquired ahead of time and has not started back
// to their triggers (used when the triggers are paused, so no node can take later fires of
// them meanwhile): the rows matching filter go, so the node's start compare-and-set finds
// nothing, and each trigger's next fire rewinds to the first of them (a trigger the last of
// them had completed waits again). On resume the trigger's misfire policy decides what a late
// fire does — as if they had never been acquired. Only a trigger's own fires go back;
// retries, recovery runs and manual fires are not its to take. It returns how many went back.
func (e *executor) returnAcquiredFires(ctx context.Context, filter string, args []any) (int64, error) {
	where := " FROM executions_live WHERE state = 'acquired' AND attempt = 0 AND cause IN ('schedule', 'misfire') AND " + filter
	withReturning := e.d().returning && e.d().kind != mysqlKind
	var rows *sql.Rows
	var err error
	if withReturning {
		rows, err = e.query(ctx, "DELETE"+where+" RETURNING trigger_id, scheduled_at, id", args...)
	} else {
		rows, err = e.query(ctx, "SELECT trigger_id, scheduled_at, id"+where+" ORDER BY id FOR UPDATE", args...)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: return acquired fires: %w", err)
	}
	type rewind struct{ first, count int64 }
	back := map[int64]*rewind{}
	var ids []int64
	for rows.Next() {
		var trigger, at, id int64
		if err := rows.Scan(&trigger, &at, &id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
		if r := back[trigger]; r == nil {
			back[trigger] = &rewind{at, 1}
		} else {
			r.first, r.count = min(r.first, at), r.count+1
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return 0, err
	}
	if !withReturning {
		for _, c := range chunks(len(ids)) {
			in, idArgs := inList(ids[c[0]:c[1]])
			if _, err := e.exec(ctx, "DELETE FROM executions_live WHERE id IN "+in, idArgs...); err != nil {
				return 0, fmt.Errorf("sqlstore: return acquired fires: %w", err)
			}
		}
	}
	for trigger, r := range back {
		if _, err := e.exec(ctx, "UPDATE triggers SET next_fire_at = ?, times_fired = times_fired - ?, version = version + 1,"+
			" state = CASE WHEN state = 'complete' THEN 'waiting' ELSE state END WHERE id = ?", r.first, r.count, trigger); err != nil {
			return 0, fmt.Errorf("sqlstore: rewind trigger %d: %w", trigger, err)
		}
	}
	return int64(len(ids)), nil
}

// TriggersResume resumes the selected paused triggers, and forgets a paused group.
func (e *executor) TriggersResume(ctx context.Context, sel store.TriggerSelector) (int64, error) {
	return e.setTriggerStates(ctx, sel, store.TriggerPaused, store.TriggerWaiting)
}

func (e *executor) setTriggerStates(ctx context.Context, sel store.TriggerSelector, from, to store.TriggerState) (int64, error) {
	cond, args, err := selector(sel)
	if err != nil {
		return 0, err
	}
	pause := to == store.TriggerPaused
	var n int64
	// A pause hands back fires acquired ahead while their node may be marking them running,
	// the rows in another order: a deadlock the database breaks by rolling one side back.
	err = e.retryDeadlock(ctx, func(e *executor) error {
		// The paused_groups row goes first, so that a trigger inserted concurrently either
		// sees it or is already there for the UPDATE.
		if group := sel.Group; group != "" || sel.All {
			if sel.All {
				group = store.PauseAllGroups
			}
			var err error
			switch {
			case pause:
				pre, post := e.d().insertIgnore()
				_, err = e.exec(ctx, pre+"paused_groups (group_name) VALUES (?)"+post, group)
			case sel.All:
				_, err = e.exec(ctx, "DELETE FROM paused_groups")
			default:
				_, err = e.exec(ctx, "DELETE FROM paused_groups WHERE group_name = ?", group)
			}
			if err != nil {
				return fmt.Errorf("sqlstore: paused group %q: %w", group, err)
			}
		}
		res, err := e.exec(ctx, "UPDATE triggers SET state = ?, version = version + 1, updated_at = ? WHERE "+cond+" AND state = ?",
			append(append([]any{string(to), e.cfg.now()}, args...), string(from))...)
		if err != nil {
			return fmt.Errorf("sqlstore: %s triggers %+v: %w", to, sel, err)
		}
		if n, err = affected(res); err != nil || !pause {
			return err
		}
		_, err = e.returnAcquiredFires(ctx, "trigger_id IN (SELECT id FROM triggers WHERE "+cond+" AND state = 'paused')", args)
		return err
	})
	return n, err
}

// TriggerSetError moves a trigger to the error state.
func (e *executor) TriggerSetError(ctx context.Context, id int64, msg string) error {
	res, err := e.exec(ctx, "UPDATE triggers SET state = ?, error_message = ?, version = version + 1, updated_at = ? WHERE id = ?",
		string(store.TriggerError), msg, e.cfg.now(), id)
	if err != nil {
		return fmt.Errorf("sqlstore: set trigger %d error: %w", id, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("trigger %d: %w", id, store.ErrNotFound)
	}
	return nil
}

// PausedGroups lists the paused groups.
func (e *executor) PausedGroups(ctx context.Context) ([]string, error) {
	rows, err := e.query(ctx, "SELECT group_name FROM paused_groups ORDER BY group_name")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: paused groups: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, fmt.Errorf("sqlstore: paused groups: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
