// Package quartz reads a Quartz 2.x JDBC job store (its QRTZ_ tables, on PostgreSQL or
// MySQL/MariaDB, with any table prefix) into an importer.Plan, for `sundial import quartz`:
// jobs, triggers of the four built-in kinds with their stored state (next and previous fire
// time, times fired, paused triggers and groups, priority, misfire instruction), and
// calendars, whose Java-serialized blobs it decodes (internal/javaser) for Quartz's own
// calendar classes. What it cannot map — custom calendar classes, blob triggers, job data that
// is not strings — is listed with the reason.
package quartz

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

	dsnpkg "github.com/sundial-scheduler/sundial/internal/dsn"
)

// DB is an open Quartz database and the dialect of its SQL.
type DB struct {
	*sql.DB
	// Postgres is true for PostgreSQL (placeholders $n), false for MySQL/MariaDB (?).
	Postgres bool
}

// Open opens the Quartz database at dsn: postgres://… (or postgresql://…), or mysql:// and
// then either the go-sql-driver DSN (user:pass@tcp(host:3306)/quartz) or a URL's rest
// (user:pass@host:3306/quartz).
func Open(dsn string) (*DB, error) {
	d, err := dsnpkg.Parse(dsn, dsnpkg.Postgres, dsnpkg.MySQL)
	if err != nil {
		return nil, fmt.Errorf("quartz: --from %s: %w", dsnpkg.Redact(dsn), err)
	}
	if d.Kind == dsnpkg.Postgres {
		return &DB{DB: stdlib.OpenDB(*d.Postgres), Postgres: true}, nil
	}
	conn, err := mysql.NewConnector(d.MySQL)
	if err != nil {
		return nil, fmt.Errorf("quartz: --from %s: %w", dsnpkg.Redact(dsn), err)
	}
	return &DB{DB: sql.OpenDB(conn)}, nil
}

// validPrefix is what a table prefix may hold: it is put into SQL unquoted, as Quartz does.
var validPrefix = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// The rows of a Quartz store that an import reads, one scheduler's (SCHED_NAME).
type jobRow struct {
	group, name, description, class              string
	durable, nonConcurrent, updateData, recovery bool
	data                                         []byte
}

type triggerRow struct {
	group, name, jobGroup, jobName, description string
	next, prev                                  int64 // -1 or NULL: none
	priority                                    int
	state, kind                                 string
	start, end                                  int64 // end 0: none
	calendar                                    string
	misfire                                     int
	data                                        []byte

	// SIMPLE
	repeatCount, repeatInterval, timesTriggered int64
	// CRON
	cronExpr, cronZone string
	// CAL_INT, DAILY_I (QRTZ_SIMPROP_TRIGGERS)
	str1, str2, str3 string
	int1, int2       int64
	long1            int64
	bool1, bool2     bool
	hasProps         bool
}

type store struct {
	jobs         []*jobRow
	triggers     []*triggerRow
	calendars    map[string][]byte
	calNames     []string
	pausedGroups []string
}

// reader runs the queries of one import.
type reader struct {
	db     *DB
	prefix string
	sched  string
}

func (r *reader) q(s string) string {
	s = strings.ReplaceAll(s, "{P}", r.prefix)
	if r.db.Postgres {
		return strings.ReplaceAll(s, "?", "$1")
	}
	return s
}

// schedulerNames lists the SCHED_NAMEs that have jobs, triggers or calendars.
func schedulerNames(ctx context.Context, db *DB, prefix string) ([]string, error) {
	r := &reader{db: db, prefix: prefix}
	rows, err := db.QueryContext(ctx, r.q(`SELECT SCHED_NAME FROM {P}JOB_DETAILS UNION SELECT SCHED_NAME FROM {P}TRIGGERS
		UNION SELECT SCHED_NAME FROM {P}CALENDARS ORDER BY 1`))
	if err != nil {
		return nil, fmt.Errorf("quartz: reading %sJOB_DETAILS (is the table prefix %q right?): %w", prefix, prefix, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (r *reader) read(ctx context.Context) (*store, error) {
	st := &store{calendars: map[string][]byte{}}
	if err := r.each(ctx, `SELECT JOB_GROUP, JOB_NAME, DESCRIPTION, JOB_CLASS_NAME, IS_DURABLE, IS_NONCONCURRENT,
		IS_UPDATE_DATA, REQUESTS_RECOVERY, JOB_DATA FROM {P}JOB_DETAILS WHERE SCHED_NAME = ? ORDER BY JOB_GROUP, JOB_NAME`,
		func(rows *sql.Rows) error {
			j := &jobRow{}
			var desc sql.NullString
			var b [4]any
			if err := rows.Scan(&j.group, &j.name, &desc, &j.class, &b[0], &b[1], &b[2], &b[3], &j.data); err != nil {
				return err
			}
			j.description = desc.String
			j.durable, j.nonConcurrent, j.updateData, j.recovery = boolOf(b[0]), boolOf(b[1]), boolOf(b[2]), boolOf(b[3])
			st.jobs = append(st.jobs, j)
			return nil
		}); err != nil {
		return nil, err
	}
	byKey := map[[2]string]*triggerRow{}
	if err := r.each(ctx, `SELECT TRIGGER_GROUP, TRIGGER_NAME, JOB_GROUP, JOB_NAME, DESCRIPTION, NEXT_FIRE_TIME,
		PREV_FIRE_TIME, PRIORITY, TRIGGER_STATE, TRIGGER_TYPE, START_TIME, END_TIME, CALENDAR_NAME, MISFIRE_INSTR, JOB_DATA
		FROM {P}TRIGGERS WHERE SCHED_NAME = ? ORDER BY TRIGGER_GROUP, TRIGGER_NAME`,
		func(rows *sql.Rows) error {
			t := &triggerRow{}
			var desc, cal sql.NullString
			var next, prev, end sql.NullInt64
			var prio, misfire sql.NullInt64
			if err := rows.Scan(&t.group, &t.name, &t.jobGroup, &t.jobName, &desc, &next, &prev, &prio, &t.state,
				&t.kind, &t.start, &end, &cal, &misfire, &t.data); err != nil {
				return err
			}
			t.description, t.calendar = desc.String, cal.String
			t.next, t.prev, t.end = nullAs(next, -1), nullAs(prev, -1), end.Int64
			t.priority, t.misfire = int(nullAs(prio, 5)), int(misfire.Int64)
			st.triggers = append(st.triggers, t)
			byKey[[2]string{t.group, t.name}] = t
			return nil
		}); err != nil {
		return nil, err
	}
	if err := r.each(ctx, `SELECT TRIGGER_GROUP, TRIGGER_NAME, REPEAT_COUNT, REPEAT_INTERVAL, TIMES_TRIGGERED
		FROM {P}SIMPLE_TRIGGERS WHERE SCHED_NAME = ?`, func(rows *sql.Rows) error {
		var g, n string
		var c, i, tt int64
		if err := rows.Scan(&g, &n, &c, &i, &tt); err != nil {
			return err
		}
		if t := byKey[[2]string{g, n}]; t != nil {
			t.repeatCount, t.repeatInterval, t.timesTriggered = c, i, tt
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := r.each(ctx, `SELECT TRIGGER_GROUP, TRIGGER_NAME, CRON_EXPRESSION, TIME_ZONE_ID
		FROM {P}CRON_TRIGGERS WHERE SCHED_NAME = ?`, func(rows *sql.Rows) error {
		var g, n, e string
		var z sql.NullString
		if err := rows.Scan(&g, &n, &e, &z); err != nil {
			return err
		}
		if t := byKey[[2]string{g, n}]; t != nil {
			t.cronExpr, t.cronZone = e, z.String
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := r.each(ctx, `SELECT TRIGGER_GROUP, TRIGGER_NAME, STR_PROP_1, STR_PROP_2, STR_PROP_3, INT_PROP_1,
		INT_PROP_2, LONG_PROP_1, BOOL_PROP_1, BOOL_PROP_2 FROM {P}SIMPROP_TRIGGERS WHERE SCHED_NAME = ?`,
		func(rows *sql.Rows) error {
			var g, n string
			var s [3]sql.NullString
			var i1, i2, l1 sql.NullInt64
			var b1, b2 any
			if err := rows.Scan(&g, &n, &s[0], &s[1], &s[2], &i1, &i2, &l1, &b1, &b2); err != nil {
				return err
			}
			if t := byKey[[2]string{g, n}]; t != nil {
				t.hasProps = true
				t.str1, t.str2, t.str3 = s[0].String, s[1].String, s[2].String
				t.int1, t.int2, t.long1 = i1.Int64, i2.Int64, l1.Int64
				t.bool1, t.bool2 = boolOf(b1), boolOf(b2)
			}
			return nil
		}); err != nil {
		return nil, err
	}
	if err := r.each(ctx, `SELECT CALENDAR_NAME, CALENDAR FROM {P}CALENDARS WHERE SCHED_NAME = ? ORDER BY CALENDAR_NAME`,
		func(rows *sql.Rows) error {
			var n string
			var b []byte
			if err := rows.Scan(&n, &b); err != nil {
				return err
			}
			st.calendars[n] = b
			st.calNames = append(st.calNames, n)
			return nil
		}); err != nil {
		return nil, err
	}
	if err := r.each(ctx, `SELECT TRIGGER_GROUP FROM {P}PAUSED_TRIGGER_GRPS WHERE SCHED_NAME = ? ORDER BY TRIGGER_GROUP`,
		func(rows *sql.Rows) error {
			var g string
			if err := rows.Scan(&g); err != nil {
				return err
			}
			st.pausedGroups = append(st.pausedGroups, g)
			return nil
		}); err != nil {
		return nil, err
	}
	return st, nil
}

// each runs a query with the scheduler name as its one parameter and calls fn per row.
func (r *reader) each(ctx context.Context, query string, fn func(*sql.Rows) error) error {
	rows, err := r.db.QueryContext(ctx, r.q(query), r.sched)
	if err != nil {
		return fmt.Errorf("quartz: %w (query: %s)", err, strings.Join(strings.Fields(r.q(query)), " "))
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("quartz: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("quartz: %w", err)
	}
	return nil
}

// boolOf reads a Quartz boolean column: BOOL on PostgreSQL, VARCHAR(1) '0'/'1' on MySQL.
func boolOf(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case int64:
		return v != 0
	case []byte:
		return boolString(string(v))
	case string:
		return boolString(v)
	}
	return false
}

func boolString(s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	return err == nil && b
}

func nullAs(n sql.NullInt64, null int64) int64 {
	if !n.Valid {
		return null
	}
	return n.Int64
}
