package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// Apps and the executor registry. Like the nodes, registry times come from the database
// clock only, so no executor's or node's clock decides who is alive.

const appCols = "name, title, address_mode, addresses, protocol, protocol_version, xxl_token_hash, xxl_token_sealed, created_at, updated_at"

func scanApp(r rowScanner) (*store.App, error) {
	var a store.App
	var addrs string
	if err := r.Scan(&a.Name, &a.Title, &a.AddressMode, &addrs, &a.Protocol, &a.ProtocolVersion, &a.XXLTokenHash, &a.XXLTokenSealed, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return nil, err
	}
	if err := decodeJSON(addrs, &a.Addresses); err != nil {
		return nil, err
	}
	if a.Protocol == "native" || a.Protocol == "" { // the name before migration 00019
		a.Protocol = store.ProtocolSundial
	}
	return &a, nil
}

// AppPut upserts the app; CreatedAt survives a replacement.
func (e *executor) AppPut(ctx context.Context, a *store.App) error {
	if a.AddressMode == "" {
		a.AddressMode = store.AddressAuto
	}
	if a.Protocol == "" {
		a.Protocol = store.ProtocolSundial
	}
	addrs, err := encodeJSON(a.Addresses, len(a.Addresses) == 0)
	if err != nil {
		return err
	}
	now := e.cfg.now()
	// apps_xxl_token_key: an access token belongs to one app, as it names the app to the server.
	_, err = e.exec(ctx, "INSERT INTO apps ("+appCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"+
		e.d().upsertOwn("name", "name", "", "title", "address_mode", "addresses", "protocol", "protocol_version", "xxl_token_hash", "xxl_token_sealed", "updated_at"),
		a.Name, a.Title, string(a.AddressMode), addrs, a.Protocol, a.ProtocolVersion, a.XXLTokenHash, a.XXLTokenSealed, now, now)
	taken := &store.ExistsError{Kind: "xxl-job access token of app", Key: a.Name, Field: "xxl_access_token", Holder: "another app"}
	if err != nil && isUniqueViolation(err) && a.XXLTokenHash != "" {
		return taken
	}
	if err != nil {
		return fmt.Errorf("sqlstore: put app %q: %w", a.Name, err)
	}
	if e.d().kind == mysqlKind && a.XXLTokenHash != "" {
		// MySQL left the holder's row as it was (upsertOwn): whose token is it now?
		var holder string
		if err := e.queryRow(ctx, "SELECT name FROM apps WHERE xxl_token_hash = ?", a.XXLTokenHash).Scan(&holder); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlstore: put app %q: %w", a.Name, err)
		}
		if holder != a.Name {
			return taken
		}
	}
	got, err := e.AppGet(ctx, a.Name)
	if err != nil {
		return err
	}
	a.CreatedAt, a.UpdatedAt = got.CreatedAt, got.UpdatedAt
	return nil
}

// AppGet returns the app name.
func (e *executor) AppGet(ctx context.Context, name string) (*store.App, error) {
	a, err := scanApp(e.queryRow(ctx, "SELECT "+appCols+" FROM apps WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("app %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get app %q: %w", name, err)
	}
	return a, nil
}

// AppList lists every app by name; apps are few (one per executor group).
func (e *executor) AppList(ctx context.Context) ([]*store.App, error) {
	rows, err := e.query(ctx, "SELECT "+appCols+" FROM apps ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list apps: %w", err)
	}
	defer rows.Close()
	var out []*store.App
	for rows.Next() {
		a, err := scanApp(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list apps: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AppDelete deletes the app; its registered instances stay until they stop beating, so an
// app deleted by mistake reappears in the registry list.
func (e *executor) AppDelete(ctx context.Context, name string) error {
	return e.inTx(ctx, func(e *executor) error {
		// The app's row, its executor credential (left behind, it would let its executor
		// register the app back) and its registered instances (an app without a row is
		// listed while one is live).
		var n int64
		for _, table := range []string{"apps WHERE name", "app_credentials WHERE app", "registry WHERE app"} {
			res, err := e.exec(ctx, "DELETE FROM "+table+" = ?", name)
			if err != nil {
				return fmt.Errorf("sqlstore: delete app %q: %w", name, err)
			}
			k, err := affected(res)
			if err != nil {
				return err
			}
			n += k
		}
		if n == 0 {
			return fmt.Errorf("app %q: %w", name, store.ErrNotFound)
		}
		return nil
	})
}

const instanceCols = "app, address, instance, version, handlers, live_ms, registered_at, last_seen"

func scanInstances(rows *sql.Rows, err error) ([]*store.Instance, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Instance
	for rows.Next() {
		var in store.Instance
		var hs string
		var liveMs int64
		if err := rows.Scan(&in.App, &in.Address, &in.Instance, &in.Version, &hs, &liveMs, &in.RegisteredAt, &in.LastSeen); err != nil {
			return nil, err
		}
		in.LiveFor = time.Duration(liveMs) * time.Millisecond
		if err := decodeJSON(hs, &in.Handlers); err != nil {
			return nil, err
		}
		out = append(out, &in)
	}
	return out, rows.Err()
}

// RegistryBeat upserts the instance with last_seen = the database's now.
func (e *executor) RegistryBeat(ctx context.Context, app, address, instance, version string, handlers []string) error {
	return e.registryBeat(ctx, app, address, instance, version, handlers, 0)
}

// RegistryBeatFor upserts the instance with its own silence threshold.
func (e *executor) RegistryBeatFor(ctx context.Context, app, address, instance string, handlers []string, liveFor time.Duration) error {
	return e.registryBeat(ctx, app, address, instance, "", handlers, liveFor)
}

func (e *executor) registryBeat(ctx context.Context, app, address, instance, version string, handlers []string, liveFor time.Duration) error {
	hs, err := encodeJSON(handlers, len(handlers) == 0)
	if err != nil {
		return err
	}
	now := e.d().nowMillis()
	// registered_at is when the instance took the address: a new process at the address (a
	// restarted executor) starts it again, so that the runs dispatched before it are told
	// from those sent to it with an instance read a moment before it came.
	since := "registered_at = CASE WHEN registry.instance = excluded.instance THEN registry.registered_at ELSE excluded.registered_at END"
	if e.d().kind == mysqlKind {
		// MySQL applies the assignments left to right: this one comes before instance's.
		since = "registered_at = IF(instance <=> VALUES(instance), registered_at, VALUES(registered_at))"
	}
	// registry_address_key: an address belongs to one app.
	upsert := e.d().upsertOwn("app, address", "app", since, "instance", "version", "handlers", "live_ms", "last_seen")
	for attempt := 1; ; attempt++ {
		_, err = e.exec(ctx, "INSERT INTO registry ("+instanceCols+") VALUES (?, ?, ?, ?, ?, ?, "+now+", "+now+")"+
			upsert, app, address, instance, version, hs, liveFor.Milliseconds())
		if isDeadlock(err) && attempt < beatAttempts {
			continue
		}
		if err != nil && !isUniqueViolation(err) {
			return fmt.Errorf("sqlstore: beat of %s at %q: %w", app, address, err)
		}
		// PostgreSQL and SQLite refuse the row (a unique violation); MySQL left the holder's.
		if err == nil && e.d().kind != mysqlKind {
			return nil
		}
		var holder string
		switch rerr := e.queryRow(ctx, "SELECT app FROM registry WHERE address = ?", address).Scan(&holder); {
		case errors.Is(rerr, sql.ErrNoRows) && err == nil:
			return nil // this beat's row, removed since by a leave
		case errors.Is(rerr, sql.ErrNoRows):
			holder = "an app that has just left"
		case rerr != nil:
			return fmt.Errorf("sqlstore: beat of %s at %q: who holds the address: %w", app, address, rerr)
		case holder == app && err != nil && attempt < beatAttempts:
			// Two beats of the address raced to insert its row (PostgreSQL checks the
			// address key, which the upsert does not arbitrate, before it sees the other's
			// row): the row is there now, and the upsert updates it.
			continue
		case holder == app && err != nil:
			return fmt.Errorf("sqlstore: beat of %s at %q: %w", app, address, err)
		case holder == app:
			return nil
		default:
			holder = "app " + holder
		}
		return &store.ExistsError{Kind: "executor address", Key: address, Field: "address", Holder: holder}
	}
}

// beatAttempts bounds the attempts of a beat that races another beat of its address.
const beatAttempts = 3

// RegistryLeave deletes the instance.
func (e *executor) RegistryLeave(ctx context.Context, app, address string) (bool, error) {
	res, err := e.exec(ctx, "DELETE FROM registry WHERE app = ? AND address = ?", app, address)
	if err != nil {
		return false, fmt.Errorf("sqlstore: unregister %s at %q: %w", app, address, err)
	}
	n, err := affected(res)
	return n > 0, err
}

// silence is how long a row may stay silent: its own live_ms when longer than the caller's
// threshold (given twice as the two ?). A CASE, since SQLite has no GREATEST.
const silence = "(CASE WHEN live_ms > ? THEN live_ms ELSE ? END)"

// touchBatch bounds the instances one RegistryTouch statement names (3 parameters each).
const touchBatch = 200

// RegistryTouch sets last_seen of the named instances' rows, touchBatch of them a statement,
// each statement its own transaction: a touch is idempotent, and a batch need not apply as one.
func (e *executor) RegistryTouch(ctx context.Context, ins []store.InstanceKey) (int64, error) {
	var touched int64
	for batch := range slices.Chunk(ins, touchBatch) {
		var cond strings.Builder
		args := make([]any, 0, 3*len(batch))
		for i, in := range batch {
			if i > 0 {
				cond.WriteString(" OR ")
			}
			cond.WriteString("(app = ? AND address = ? AND instance = ?)")
			args = append(args, in.App, in.Address, in.Instance)
		}
		res, err := e.exec(ctx, "UPDATE registry SET last_seen = "+e.d().nowMillis()+" WHERE "+cond.String(), args...)
		if err != nil {
			return touched, fmt.Errorf("sqlstore: touch %d registry rows (first %s at %q): %w", len(batch), batch[0].App, batch[0].Address, err)
		}
		n, err := affected(res)
		if err != nil {
			return touched, err
		}
		touched += n
	}
	return touched, nil
}

// RegistryLive lists the instances seen within olderThan, served by registry_app_seen_idx.
func (e *executor) RegistryLive(ctx context.Context, app string, olderThan time.Duration) ([]*store.Instance, error) {
	q := "SELECT " + instanceCols + " FROM registry WHERE last_seen >= " + e.d().nowMillis() + " - " + silence
	args := []any{olderThan.Milliseconds(), olderThan.Milliseconds()}
	if app != "" {
		q += " AND app = ?"
		args = append(args, app)
	}
	ins, err := scanInstances(e.query(ctx, q+" ORDER BY app, address", args...))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: live instances of %q: %w", app, err)
	}
	return ins, nil
}

// RegistryAt lists the instances live at address, served by registry_address_key.
func (e *executor) RegistryAt(ctx context.Context, address string, olderThan time.Duration) ([]*store.Instance, error) {
	ins, err := scanInstances(e.query(ctx, "SELECT "+instanceCols+" FROM registry WHERE address = ? AND last_seen >= "+
		e.d().nowMillis()+" - "+silence+" ORDER BY app", address, olderThan.Milliseconds(), olderThan.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: live instances at %q: %w", address, err)
	}
	return ins, nil
}

// RegistrySweep selects the silent instances, then deletes each with the same condition: one
// that beat between the two statements is not deleted and not returned.
func (e *executor) RegistrySweep(ctx context.Context, olderThan time.Duration, seenSince int64) ([]*store.Instance, error) {
	var gone []*store.Instance
	err := e.inTx(ctx, func(e *executor) error {
		stale, err := scanInstances(e.query(ctx, "SELECT "+instanceCols+" FROM registry WHERE last_seen >= ? AND last_seen < "+
			e.d().nowMillis()+" - "+silence+" ORDER BY app, address", seenSince, olderThan.Milliseconds(), olderThan.Milliseconds()))
		if err != nil {
			return err
		}
		for _, in := range stale {
			res, err := e.exec(ctx, "DELETE FROM registry WHERE app = ? AND address = ? AND last_seen < "+
				e.d().nowMillis()+" - "+silence, in.App, in.Address, olderThan.Milliseconds(), olderThan.Milliseconds())
			if err != nil {
				return err
			}
			if n, err := affected(res); err != nil {
				return err
			} else if n > 0 {
				gone = append(gone, in)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sweep the registry: %w", err)
	}
	return gone, nil
}

// setDispatch records the dispatch of a running execution of o: one send of
// ExecutionsRecordDispatches, written alone.
func (e *executor) setDispatch(ctx context.Context, o store.Owner, id int64, address, instance string, shardIndex, shardTotal int, msg string) (bool, error) {
	owned, args := ownedBy(o)
	res, err := e.exec(ctx, "UPDATE executions_live SET executor_address = ?, executor_instance = ?, shard_index = ?, shard_total = ?, trigger_msg = ?,"+
		" executor_app = COALESCE((SELECT app FROM jobs WHERE jobs.id = executions_live.job_id), ''),"+
		" dispatched_at = "+e.d().nowMillis()+" WHERE id = ? AND state = 'running' AND "+owned, concat([]any{address, instance, shardIndex, shardTotal, msg, id}, args)...)
	if err != nil {
		return false, fmt.Errorf("sqlstore: record the dispatch of execution %d to %q: %w", id, address, err)
	}
	n, err := affected(res)
	return n > 0, err
}

// ExecutionsRecordDispatches writes the batch's dispatch records with a statement per kind
// and owner, each its own transaction (no BEGIN and COMMIT round trips: every record is a
// compare-and-set of its own, and the batch need not apply as one): the sends (on MySQL, which
// has no UPDATE ... RETURNING, a transaction that locks the rows and updates them), then
// the acceptances. A second send of one run in the batch is written after the first.
func (e *executor) ExecutionsRecordDispatches(ctx context.Context, recs []store.DispatchRecord) ([]bool, error) {
	ok := make([]bool, len(recs))
	sends, accepted := map[store.Owner][]store.DispatchRecord{}, map[store.Owner][]int64{}
	var again []int
	seen := map[int64]bool{}
	for i, r := range recs {
		switch {
		case r.Accepted:
			accepted[r.Owner] = append(accepted[r.Owner], r.ID)
		case seen[r.ID]:
			again = append(again, i)
		default:
			seen[r.ID] = true
			sends[r.Owner] = append(sends[r.Owner], r)
		}
	}
	won := map[int64]bool{}
	for o, rs := range sends {
		var got []int64
		var err error
		if e.d().kind == mysqlKind {
			err = e.retryDeadlock(ctx, func(e *executor) error {
				got, err = e.setDispatches(ctx, o, rs)
				return err
			})
		} else {
			got, err = e.setDispatches(ctx, o, rs)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: record the dispatch of %d executions: %w", len(rs), err)
		}
		for _, id := range got {
			won[id] = true
		}
	}
	for _, i := range again {
		r := recs[i]
		var err error
		if ok[i], err = e.setDispatch(ctx, r.Owner, r.ID, r.Address, r.Instance, r.ShardIndex, r.ShardTotal, r.Message); err != nil {
			return nil, err
		}
	}
	wonAccepted := map[store.Owner]map[int64]bool{}
	for o, ids := range accepted {
		owned, args := ownedBy(o)
		got, err := e.casExecutions(ctx, "executions_live", ids, "trigger_code = ?", []any{store.DispatchAccepted},
			"state = 'running' AND "+owned, args)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: record that %d executions were accepted: %w", len(ids), err)
		}
		set := make(map[int64]bool, len(got))
		for _, id := range got {
			set[id] = true
		}
		wonAccepted[o] = set
	}
	seen = map[int64]bool{}
	for i, r := range recs {
		switch {
		case r.Accepted:
			ok[i] = wonAccepted[r.Owner][r.ID]
		case !seen[r.ID]:
			seen[r.ID] = true
			ok[i] = won[r.ID]
		}
	}
	return ok, nil
}

var dispatchCols = []string{"id", "address", "instance", "shard_index", "shard_total", "msg"}

// dispatchSet is setDispatch's SET list, from the batch u onto t.
func (e *executor) dispatchSet() string {
	return "executor_address = u.address, executor_instance = u.instance, shard_index = u.shard_index," +
		" shard_total = u.shard_total, trigger_msg = u.msg," +
		" executor_app = COALESCE((SELECT app FROM jobs WHERE jobs.id = t.job_id), ''), dispatched_at = " + e.d().nowMillis()
}

// setDispatches records the sends of o's running executions rs (distinct ids) with one
// statement, and returns the ids it recorded.
func (e *executor) setDispatches(ctx context.Context, o store.Owner, rs []store.DispatchRecord) ([]int64, error) {
	switch e.d().kind {
	case postgres:
		ids, idx, total := make([]int64, len(rs)), make([]int64, len(rs)), make([]int64, len(rs))
		addr, inst, msg := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
		for i, r := range rs {
			ids[i], addr[i], inst[i], idx[i], total[i], msg[i] = r.ID, r.Address, r.Instance, int64(r.ShardIndex), int64(r.ShardTotal), r.Message
		}
		return scanInt64s(e.query(ctx, "UPDATE executions_live AS t SET "+e.dispatchSet()+
			" FROM unnest(?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[]) AS u("+strings.Join(dispatchCols, ", ")+")"+
			" WHERE t.id = u.id AND t.state = 'running' AND t.node = ? AND t.incarnation = ? RETURNING t.id",
			ids, addr, inst, idx, total, msg, o.Node, o.Incarnation))
	case sqlite:
		var won []int64
		for _, c := range chunks(len(rs)) {
			got, err := scanInt64s(e.query(ctx, "WITH "+e.d().valuesTable(dispatchCols, c[1]-c[0])+
				" UPDATE executions_live AS t SET "+e.dispatchSet()+" FROM u"+
				" WHERE t.id = u.id AND t.state = 'running' AND t.node = ? AND t.incarnation = ? RETURNING id",
				append(dispatchArgs(rs[c[0]:c[1]]), o.Node, o.Incarnation)...))
			if err != nil {
				return won, err
			}
			won = append(won, got...)
		}
		return won, nil
	}
	// MySQL: lock the rows that are o's and running (as casExecutions does, through the
	// primary key), then update those from the batch.
	var won []int64
	for _, c := range chunks(len(rs)) {
		batch := rs[c[0]:c[1]]
		ids := make([]int64, len(batch))
		for i, r := range batch {
			ids[i] = r.ID
		}
		in, idArgs := inList(ids)
		got, err := scanInt64s(e.query(ctx, "SELECT id FROM executions_live FORCE INDEX (PRIMARY) WHERE id IN "+in+
			" AND state = 'running' AND node = ? AND incarnation = ? ORDER BY id"+e.d().lock(), append(idArgs, o.Node, o.Incarnation)...))
		if err != nil {
			return won, err
		}
		if len(got) == 0 {
			continue
		}
		lockedIn, lockedArgs := inList(got)
		if _, err := e.exec(ctx, "UPDATE "+e.d().valuesTable(dispatchCols, len(batch))+" STRAIGHT_JOIN executions_live AS t ON t.id = u.id SET "+
			qualifySet(e.dispatchSet())+" WHERE t.id IN "+lockedIn, append(dispatchArgs(batch), lockedArgs...)...); err != nil {
			return won, err
		}
		won = append(won, got...)
	}
	return won, nil
}

func dispatchArgs(rs []store.DispatchRecord) []any {
	args := make([]any, 0, len(rs)*len(dispatchCols))
	for _, r := range rs {
		args = append(args, r.ID, r.Address, r.Instance, r.ShardIndex, r.ShardTotal, r.Message)
	}
	return args
}

// ExecutionsLoseOnExecutor ends the instance's running executions as lost (through
// executions_live_executor_idx); a result that arrives first wins, and its execution is not
// returned.
func (e *executor) ExecutionsLoseOnExecutor(ctx context.Context, app, address string) ([]*store.Execution, error) {
	return e.loseWhere(ctx, "executor_address = ? AND state = 'running' AND executor_app = ?"+notMapping,
		[]any{address, app})
}

// ExecutionsRunningOnExecutor lists the instance's running executions (a scan of the small
// live table, as for ExecutionsLoseOnExecutor).
func (e *executor) ExecutionsRunningOnExecutor(ctx context.Context, app, address string) ([]store.ExecutorRun, error) {
	rows, err := e.query(ctx, "SELECT id, executor_instance, fired_at, dispatched_at, trigger_code FROM executions_live WHERE executor_address = ?"+
		" AND state = 'running' AND executor_app = ?"+notMapping+" ORDER BY id", address, app)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: running executions on %s at %q: %w", app, address, err)
	}
	defer rows.Close()
	var out []store.ExecutorRun
	for rows.Next() {
		var r store.ExecutorRun
		var code int
		if err := rows.Scan(&r.ID, &r.Instance, &r.FiredAt, &r.DispatchedAt, &code); err != nil {
			return nil, fmt.Errorf("sqlstore: running executions on %s at %q: %w", app, address, err)
		}
		r.Accepted = code == store.DispatchAccepted
		out = append(out, r)
	}
	return out, rows.Err()
}

// ExecutionDispatchedTo reads a running execution's dispatch (ExecutionsDispatchedTo).
func (e *executor) ExecutionDispatchedTo(ctx context.Context, id int64) (*store.Dispatched, error) {
	got, err := e.ExecutionsDispatchedTo(ctx, []int64{id})
	if err == nil && got[id] == nil {
		err = fmt.Errorf("sqlstore: running execution %d: %w", id, store.ErrNotFound)
	}
	return got[id], err
}

// ExecutionLostTo reads a lost execution's dispatch (ExecutionsLostTo).
func (e *executor) ExecutionLostTo(ctx context.Context, id int64) (*store.Dispatched, error) {
	got, err := e.ExecutionsLostTo(ctx, []int64{id})
	if err == nil && got[id] == nil {
		err = fmt.Errorf("sqlstore: lost remote execution %d: %w", id, store.ErrNotFound)
	}
	return got[id], err
}

// ExecutionsDispatchedTo reads the running executions' dispatches from the live table by
// their primary keys.
func (e *executor) ExecutionsDispatchedTo(ctx context.Context, ids []int64) (map[int64]*store.Dispatched, error) {
	return e.dispatches(ctx, "executions_live", "running", ids)
}

// ExecutionsLostTo reads the lost executions' dispatches from the history by their primary
// keys.
func (e *executor) ExecutionsLostTo(ctx context.Context, ids []int64) (map[int64]*store.Dispatched, error) {
	return e.dispatches(ctx, "executions", "lost", ids)
}

func (e *executor) dispatches(ctx context.Context, table, state string, ids []int64) (map[int64]*store.Dispatched, error) {
	out := make(map[int64]*store.Dispatched, len(ids))
	for _, c := range chunks(len(ids)) {
		in, args := inList(ids[c[0]:c[1]])
		rows, err := e.query(ctx, "SELECT x.id, x.executor_app, x.executor_address, x.executor_instance, x.fired_at FROM "+table+" x"+
			" WHERE x.id IN "+in+" AND x.state = '"+state+"'", args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: dispatches of %s executions %v: %w", state, ids, err)
		}
		for rows.Next() {
			var d store.Dispatched
			if err := rows.Scan(&d.ID, &d.App, &d.Address, &d.Instance, &d.FiredAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: dispatches of %s executions: %w", state, err)
			}
			out[d.ID] = &d
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlstore: dispatches of %s executions: %w", state, err)
		}
	}
	return out, nil
}

// ExecutionsLoseOnExecutorIDs ends the given executions as lost if they still run on address.
func (e *executor) ExecutionsLoseOnExecutorIDs(ctx context.Context, address string, runs []store.ExecutorRun) ([]*store.Execution, error) {
	var lost []*store.Execution
	for _, c := range chunks(len(runs)) {
		part := runs[c[0]:c[1]]
		ids := make([]int64, len(part))
		same := make([]string, len(part))
		args := []any{address}
		for i, r := range part {
			ids[i] = r.ID
			same[i] = "(id = ? AND executor_instance = ? AND dispatched_at = ?)"
			args = append(args, r.ID, r.Instance, r.DispatchedAt)
		}
		xs, err := e.loseIDsWhere(ctx, ids, "executor_address = ? AND state = 'running' AND ("+strings.Join(same, " OR ")+")"+notMapping, args)
		if err != nil {
			return lost, err
		}
		lost = append(lost, xs...)
	}
	return lost, nil
}

// ExecutionsCompleteLate updates lost executions in the history one by one: late results
// are rare, and each is a compare-and-set of its own.
func (e *executor) ExecutionsCompleteLate(ctx context.Context, rs []store.ExecutionResult) ([]int64, error) {
	var won []int64
	err := e.inTx(ctx, func(e *executor) error {
		for _, r := range rs {
			if !r.State.Terminal() {
				return fmt.Errorf("execution %d: result state %q is not terminal", r.ID, r.State)
			}
			set, args := "", []any{string(r.State), r.HandleCode, r.HandleMsg, r.FinishedAt, r.OutputLost}
			if r.StartedAt != 0 {
				set, args = ", started_at = ?", append(args, r.StartedAt)
			}
			res, err := e.exec(ctx, "UPDATE executions SET state = ?, handle_code = ?, handle_msg = ?, finished_at = ?, output_lost = output_lost + ?"+set+
				" WHERE id = ? AND state = 'lost'", append(args, r.ID)...)
			if err != nil {
				return err
			}
			if n, err := affected(res); err != nil {
				return err
			} else if n > 0 {
				won = append(won, r.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: record %d late results: %w", len(rs), err)
	}
	return won, nil
}

// KillRequest records a kill request; a repeated one changes nothing.
func (e *executor) KillRequest(ctx context.Context, id int64, node string) error {
	pre, suf := e.d().insertIgnore()
	if _, err := e.exec(ctx, pre+"kill_requests (execution_id, node, requested_at) VALUES (?, ?, "+e.d().nowMillis()+")"+suf, id, node); err != nil {
		return fmt.Errorf("sqlstore: request the kill of execution %d on %q: %w", id, node, err)
	}
	return nil
}

// KillRequestsTake reads and deletes the node's kill requests in one transaction. A node
// polls it while it runs handlers, and there is almost never a request: a plain read finds
// that out in one statement, without a transaction.
func (e *executor) KillRequestsTake(ctx context.Context, node string) ([]int64, error) {
	ids, err := scanInt64s(e.query(ctx, "SELECT execution_id FROM kill_requests WHERE node = ?", node))
	if err != nil || len(ids) == 0 {
		if err != nil {
			return nil, fmt.Errorf("sqlstore: read the kill requests of %q: %w", node, err)
		}
		return nil, nil
	}
	err = e.inTx(ctx, func(e *executor) error {
		var err error
		if ids, err = scanInt64s(e.query(ctx, "SELECT execution_id FROM kill_requests WHERE node = ? ORDER BY execution_id"+e.d().lock(), node)); err != nil || len(ids) == 0 {
			return err
		}
		for _, c := range chunks(len(ids)) {
			in, args := inList(ids[c[0]:c[1]])
			if _, err := e.exec(ctx, "DELETE FROM kill_requests WHERE execution_id IN "+in, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: take the kill requests of %q: %w", node, err)
	}
	return ids, nil
}

// ExecutionsRunningByExecutor counts running executions per executor: a scan of the small
// live table.
func (e *executor) ExecutionsRunningByExecutor(ctx context.Context, app string) (map[store.ExecutorKey]int, error) {
	q := "SELECT executor_app, executor_address, COUNT(*) FROM executions_live" +
		" WHERE state = 'running' AND executor_address <> ''"
	var args []any
	if app != "" {
		q += " AND executor_app = ?"
		args = append(args, app)
	}
	rows, err := e.query(ctx, q+" GROUP BY executor_app, executor_address", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: count runs per executor of %q: %w", app, err)
	}
	defer rows.Close()
	out := map[store.ExecutorKey]int{}
	for rows.Next() {
		var k store.ExecutorKey
		var n int
		if err := rows.Scan(&k.App, &k.Address, &n); err != nil {
			return nil, fmt.Errorf("sqlstore: count runs per executor of %q: %w", app, err)
		}
		out[k] = n
	}
	return out, rows.Err()
}
