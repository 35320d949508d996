package sqlstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

type dialectKind int

const (
	sqlite dialectKind = iota
	postgres
	mysqlKind
)

func (k dialectKind) dir() string {
	return [...]string{"sqlite", "postgres", "mysql"}[k]
}

func (k dialectKind) goose() goose.Dialect {
	return [...]goose.Dialect{goose.DialectSQLite3, goose.DialectPostgres, goose.DialectMySQL}[k]
}

// dialect is what differs between the databases. Queries are written with ? placeholders and
// the SQL shared by all three; the methods below fill in the rest.
type dialect struct {
	kind dialectKind
	// returning is true where INSERT ... RETURNING works (not on MySQL 8).
	returning bool
}

// maxBatchRows bounds the rows of one multi-row statement, keeping it below every driver's
// placeholder limit (SQLite 32766, PostgreSQL and MySQL 65535) for our widest table.
const maxBatchRows = 500

// rebind turns ? placeholders into PostgreSQL's $n. Queries never contain a literal '?'.
func (d *dialect) rebind(q string) string {
	if d.kind != postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// nowMillis is an SQL expression for the database clock in Unix milliseconds.
func (d *dialect) nowMillis() string {
	switch d.kind {
	case postgres:
		// clock_timestamp, not now(): now() is frozen at the start of the transaction.
		return "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint)"
	case mysqlKind:
		// The session time zone is UTC (see openMySQL), so this round trip is exact.
		return "CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)"
	default:
		return "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
	}
}

// lockSkip is appended to a SELECT whose rows the caller will update in the same transaction.
// SQLite needs none: a write transaction there already excludes every other writer.
func (d *dialect) lockSkip() string {
	if d.kind == sqlite {
		return ""
	}
	return " FOR UPDATE SKIP LOCKED"
}

// lock is like lockSkip but waits for locked rows.
func (d *dialect) lock() string {
	if d.kind == sqlite {
		return ""
	}
	return " FOR UPDATE"
}

// insertIgnore returns the INSERT prefix and suffix that skip rows violating a unique key.
func (d *dialect) insertIgnore() (prefix, suffix string) {
	if d.kind == mysqlKind {
		return "INSERT IGNORE INTO ", ""
	}
	return "INSERT INTO ", " ON CONFLICT DO NOTHING"
}

// upsert returns the clause that turns an INSERT into an update of cols on a conflict on key.
func (d *dialect) upsert(key string, cols ...string) string {
	return d.upsertWith(key, "", cols...)
}

// upsertWith is upsert with one more assignment, first written in the dialect's own terms
// (it comes first: MySQL applies assignments left to right, so it sees the old row).
func (d *dialect) upsertWith(key, first string, cols ...string) string {
	var b strings.Builder
	sets := []string{}
	if first != "" {
		sets = append(sets, first)
	}
	if d.kind == mysqlKind {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
		for _, c := range cols {
			sets = append(sets, fmt.Sprintf("%s = VALUES(%s)", c, c))
		}
	} else {
		fmt.Fprintf(&b, " ON CONFLICT (%s) DO UPDATE SET ", key)
		for _, c := range cols {
			sets = append(sets, fmt.Sprintf("%s = excluded.%s", c, c))
		}
	}
	b.WriteString(strings.Join(sets, ", "))
	return b.String()
}

// upsertOwn is upsertWith for a table with a second unique key besides key: on PostgreSQL
// and SQLite a row colliding on that one is a unique violation, but MySQL updates whichever
// row it collides with, another owner's too. There every assignment (first, "col = expr" in
// MySQL's terms, too) keeps the old value unless the row's own column is the new row's, and
// the caller reads which owner holds the second key afterwards.
func (d *dialect) upsertOwn(key, own, first string, cols ...string) string {
	if d.kind != mysqlKind {
		return d.upsertWith(key, first, cols...)
	}
	mine := func(col, set string) string {
		return col + " = IF(" + own + " <=> VALUES(" + own + "), " + set + ", " + col + ")"
	}
	var sets []string
	if col, set, ok := strings.Cut(first, " = "); ok {
		sets = append(sets, mine(col, set))
	}
	for _, c := range cols {
		sets = append(sets, mine(c, "VALUES("+c+")"))
	}
	return " ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
}

// placeholders returns "(?, ?, ...)" with n marks.
func placeholders(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

// valuesTable returns an SQL table expression named u with the given columns and rows rows of
// placeholders, for joining a batch of per-row values into an UPDATE. SQLite gets a VALUES
// list (inside a CTE, to name the columns), MySQL a UNION ALL of SELECTs, which both MySQL 8
// and MariaDB accept. PostgreSQL uses unnest over arrays instead (see the callers).
func (d *dialect) valuesTable(cols []string, rows int) string {
	var b strings.Builder
	if d.kind == mysqlKind {
		b.WriteString("(SELECT ")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("? AS " + c)
		}
		row := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
		for r := 1; r < rows; r++ {
			b.WriteString(" UNION ALL SELECT " + row)
		}
		b.WriteString(") AS u")
		return b.String()
	}
	fmt.Fprintf(&b, "u(%s) AS (VALUES ", strings.Join(cols, ", "))
	row := placeholders(len(cols))
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(")")
	return b.String()
}

// inList returns "(?, ?, ...)" for ids and the ids as arguments.
func inList[T any](ids []T) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return placeholders(len(ids)), args
}

// chunks splits n items into [lo, hi) ranges of at most maxBatchRows.
func chunks(n int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; lo += maxBatchRows {
		out = append(out, [2]int{lo, min(lo+maxBatchRows, n)})
	}
	return out
}

// Constraint violations, as each driver reports them.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	var se *msqlite.Error
	switch {
	case errors.As(err, &pe):
		return pe.Code == "23505"
	case errors.As(err, &me):
		return me.Number == 1062
	case errors.As(err, &se):
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// isDeadlock reports whether the database broke a deadlock by rolling back err's transaction
// (InnoDB 1213, PostgreSQL 40P01): nothing of it was applied, and it may be run again.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &pe):
		return pe.Code == "40P01"
	case errors.As(err, &me):
		return me.Number == 1213
	}
	return false
}

func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	var se *msqlite.Error
	switch {
	case errors.As(err, &pe):
		return pe.Code == "23503"
	case errors.As(err, &me):
		return me.Number == 1451 || me.Number == 1452
	case errors.As(err, &se):
		// A RESTRICT action fires from SQLite's internal FK trigger and reports
		// SQLITE_CONSTRAINT_TRIGGER, so the message is the only common mark.
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY ||
			se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT && strings.Contains(se.Error(), "FOREIGN KEY")
	}
	return false
}

// JSON columns. Empty values are stored as "" so that the common case costs nothing to parse.

func encodeJSON(v any, empty bool) (string, error) {
	if empty {
		return "", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlstore: encode %T: %w", v, err)
	}
	return string(b), nil
}

func decodeJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("sqlstore: decode %q: %w", truncate(s, 64), err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// nullString stores "" as NULL (for foreign keys that may be absent).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullInt64 stores 0 as NULL.
func nullInt64(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// scopeCond is a Scope filter's condition on a job's app column: the scope's apps and no app
// (store.Readable), or nothing for a nil scope.
func scopeCond(appCol string, scope []string) (string, []any) {
	if scope == nil {
		return "", nil
	}
	in, args := inList(append([]string{""}, scope...))
	return " AND " + appCol + " IN " + in, args
}

// scopedJobsCond is scopeCond for rows that name their job by job_id (executions, triggers).
func scopedJobsCond(scope []string) (string, []any) {
	cond, args := scopeCond("j.app", scope)
	if cond == "" {
		return "", nil
	}
	return " AND job_id IN (SELECT j.id FROM jobs j WHERE 1 = 1" + cond + ")", args
}
