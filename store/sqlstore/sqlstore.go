// Package sqlstore implements store.Store on SQL databases: SQLite (modernc.org/sqlite, pure
// Go), PostgreSQL (pgx) and MySQL 8 / MariaDB >= 10.6 (go-sql-driver/mysql). The queries are
// shared; a small dialect layer covers what differs: placeholders, RETURNING, upserts, row
// locking, batch updates and the database clock.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/dsn"
	"github.com/sundial-scheduler/sundial/store"
)

//go:embed migrations
var migrations embed.FS

// DefaultLogLineCap is how many log lines an execution keeps unless WithLogLineCap says
// otherwise.
const DefaultLogLineCap = 10000

// Store is a store.Store backed by a SQL database.
type Store struct {
	executor
	db *sql.DB
}

var _ store.Store = (*Store)(nil)

// Option configures Open.
type Option func(*config)

// WithLogLineCap caps the log lines stored per execution; lines past it are dropped.
func WithLogLineCap(n int64) Option { return func(c *config) { c.logLineCap = n } }

// DefaultMaxConns is how many connections a PostgreSQL or MySQL store opens at most unless
// WithMaxConns says otherwise. A node's loops use about six at once (two acquirers, the
// starter, the completer, the cluster duties, a leader duty); the rest serve the API.
const DefaultMaxConns = 16

// WithMaxConns bounds the connections of a PostgreSQL or MySQL store (SQLite uses one).
// Half of them stay open while idle (for a minute): a pool that closed all but two, as
// database/sql does by default, would open a new server process for most statements under
// load (measured: 10 % of the throughput at 30,000 fires/s).
func WithMaxConns(n int) Option { return func(c *config) { c.maxConns = n } }

// WithQueueWatch calls f each time a caller of a SQLite store starts to wait for its one
// connection, with the caller's priority (the other databases never queue callers). Tests
// synchronise on it.
func WithQueueWatch(f func(store.Priority)) Option { return func(c *config) { c.queueWatch = f } }

// config is what every executor of one Store shares.
type config struct {
	dialect    dialect
	db         *sql.DB
	logLineCap int64
	maxConns   int
	now        func() int64
	// noReturning makes a MariaDB connection take MySQL 8's paths (tests only).
	noReturning bool
	// gate orders the callers of SQLite's one connection (gate.go); nil on the others.
	gate *gate
	// queueWatch is WithQueueWatch's.
	queueWatch func(store.Priority)

	statements, transactions atomic.Int64 // see Stats
	byOp                     *opCounts    // WithOperationCounts; nil counts no operations
}

// Stats counts the work a Store gave its database since it was opened.
type Stats struct {
	// Statements is every statement sent.
	Statements int64
	// Transactions counts explicit transactions and the statements sent outside one (each
	// its own transaction).
	Transactions int64
	// ByOperation splits them by operation (WithOperationCounts; nil without it).
	ByOperation map[string]OpCount
}

// Stats returns the store's counters; benchmarks divide them by the fires they saw.
func (s *Store) Stats() Stats {
	st := Stats{Statements: s.cfg.statements.Load(), Transactions: s.cfg.transactions.Load()}
	if s.cfg.byOp != nil {
		st.ByOperation = s.cfg.byOp.snapshot()
	}
	return st
}

// Open connects to the database named by dsnStr and picks the dialect from it:
//
//	postgres://user@host:5432/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@tcp(host:3306)/db             (the go-sql-driver DSN after the scheme)
//	mysql://user:pass@host:3306/db                  (the same as a URL writes it)
//	sqlite://path/to/file.db, file:path.db or a bare path
//
// (internal/dsn reads them.) It does not migrate; call Migrate.
func Open(ctx context.Context, dsnStr string, opts ...Option) (*Store, error) {
	cfg := &config{logLineCap: DefaultLogLineCap, maxConns: DefaultMaxConns, now: func() int64 { return time.Now().UnixMilli() }}
	for _, o := range opts {
		o(cfg)
	}
	d, err := dsn.Parse(dsnStr)
	if err == nil {
		switch d.Kind {
		case dsn.Postgres:
			cfg.dialect = dialect{kind: postgres, returning: true}
			cfg.db = openPostgres(d.Postgres)
		case dsn.MySQL:
			cfg.dialect = dialect{kind: mysqlKind}
			cfg.db, err = openMySQL(d.MySQL)
		default:
			cfg.dialect = dialect{kind: sqlite, returning: true}
			cfg.db, err = openSQLite(d.SQLite)
			cfg.gate = &gate{watch: cfg.queueWatch}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", dsn.Redact(dsnStr), err)
	}
	if cfg.dialect.kind != sqlite {
		cfg.sizePool()
	}
	if err := cfg.db.PingContext(ctx); err != nil {
		cfg.db.Close()
		return nil, fmt.Errorf("sqlstore: connect to %s: %w", dsn.Redact(dsnStr), err)
	}
	if cfg.dialect.kind == mysqlKind {
		// MariaDB has INSERT ... RETURNING since 10.5; MySQL 8 has none.
		var v string
		if err := cfg.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
			cfg.db.Close()
			return nil, fmt.Errorf("sqlstore: server version: %w", err)
		}
		mariadb := strings.Contains(strings.ToLower(v), "mariadb")
		cfg.dialect.returning = mariadb && !cfg.noReturning
		if _, ok := d.MySQL.Params[mariaDBIdleTransactionTimeout]; mariadb && !ok {
			// Only MariaDB knows the variable (a MySQL 8 server refuses a session that sets it),
			// and the driver sets variables as it connects: open again with it.
			cfg.db.Close()
			d.MySQL.Params[mariaDBIdleTransactionTimeout] = fmt.Sprint(int(IdleTransactionTimeout.Seconds()))
			if cfg.db, err = openMySQL(d.MySQL); err != nil {
				return nil, fmt.Errorf("sqlstore: open %s: %w", dsn.Redact(dsnStr), err)
			}
			cfg.sizePool()
		}
	}
	return &Store{executor: executor{cfg: cfg, q: cfg.db}, db: cfg.db}, nil
}

// sizePool applies WithMaxConns to a PostgreSQL or MySQL pool.
func (c *config) sizePool() {
	c.db.SetMaxOpenConns(c.maxConns)
	c.db.SetMaxIdleConns(max(c.maxConns/2, 2))
	c.db.SetConnMaxIdleTime(time.Minute)
}

// IdleTransactionTimeout is how long the database keeps a session idle inside a transaction
// before it ends the session, unless the DSN names the setting itself
// (idle_in_transaction_session_timeout on PostgreSQL, in ms; idle_transaction_timeout on
// MariaDB, in s). Why: a node frozen (SIGSTOP, a paused VM) or cut off by the network inside a
// transaction keeps what it locked — an acquisition round holds the node's life row — until
// its session dies, which without this takes as long as TCP needs to give up (hours), and the
// leader's recovery of that node waits on the lock all that while. No transaction of
// Sundial's waits on anything but the database between two statements, so a live node is
// never idle for this long. MySQL 8 has no such setting: there the lock is released when the
// connection drops.
const IdleTransactionTimeout = 30 * time.Second

// mariaDBIdleTransactionTimeout is MariaDB's name for the setting (see IdleTransactionTimeout).
const mariaDBIdleTransactionTimeout = "idle_transaction_timeout"

func openPostgres(pc *pgx.ConnConfig) *sql.DB {
	// pgx prepares every statement once per connection, and after five executions PostgreSQL
	// may settle on a generic plan. The executions tables grow from nothing to millions of
	// rows between two ANALYZE runs, and a plan settled while one was empty kept scanning it
	// whole (measured: an insert of 1,000 fires taking 7 s). A plan made per execution costs
	// a fraction of a millisecond and sees each batch's real size.
	if _, ok := pc.RuntimeParams["plan_cache_mode"]; !ok {
		pc.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	if _, ok := pc.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		pc.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(IdleTransactionTimeout.Milliseconds())
	}
	return stdlib.OpenDB(*pc)
}

func openMySQL(mc *mysql.Config) (*sql.DB, error) {
	// Counts must mean "rows matched": an update that rewrites a row with equal values is
	// still a hit for ErrNotFound checks.
	mc.ClientFoundRows = true
	// One round trip per statement instead of prepare + execute + close; batch statements
	// also get literal-typed derived tables this way.
	mc.InterpolateParams = true
	// Goose's version table has a TIMESTAMP column, which MigrationStatus scans into a
	// time.Time (Sundial's own tables hold Unix milliseconds): without this, `sundial migrate
	// status`, --no-migrate and the import's migration check failed on every MySQL DSN.
	mc.ParseTime = true
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	// The database clock is read with UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)), which is only
	// unambiguous in a zone without daylight saving.
	if _, ok := mc.Params["time_zone"]; !ok {
		mc.Params["time_zone"] = "'+00:00'"
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// openSQLite opens the SQLite file at path (with its ?query) with WAL, a busy timeout,
// foreign keys, and BEGIN IMMEDIATE for every transaction: SQLite has one writer, and a
// transaction that starts as a reader and later writes can fail with SQLITE_BUSY where an
// immediate one would wait.
func openSQLite(path string) (*sql.DB, error) {
	path, query, _ := strings.Cut(path, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	pragmas := strings.Join(q["_pragma"], ",")
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		name := p[:strings.IndexByte(p, '(')]
		if !strings.Contains(pragmas, name) {
			q.Add("_pragma", p)
		}
	}
	if q.Get("_txlock") == "" {
		q.Set("_txlock", "immediate")
	}
	if err := createPrivate(path, q); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// SQLite has one writer. With one connection the process's writers queue (in the store's
	// gate, in priority order) instead of failing with SQLITE_BUSY when a transaction holds
	// the lock longer than the busy timeout; callers must not use the store while they hold
	// a Tx.
	db.SetMaxOpenConns(1)
	return db, nil
}

// createPrivate creates a new SQLite file readable by its owner only, before the driver
// creates it with the umask's mode; SQLite gives its WAL and shared-memory files the
// database file's mode.
func createPrivate(path string, q url.Values) error {
	if path == ":memory:" || q.Get("mode") == "memory" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Analyze refreshes the planner's statistics, as a bulk load should before the load runs
// (autovacuum and auto-analyze would catch up only later). On PostgreSQL it also vacuums: a
// load passes every execution through the live table, and until autovacuum comes its dead
// rows make each scan of that small table read hundreds of megabytes.
func (s *Store) Analyze(ctx context.Context) error {
	q := "ANALYZE"
	switch s.cfg.dialect.kind {
	case mysqlKind:
		q = "ANALYZE TABLE jobs, triggers, executions, executions_live"
	case postgres:
		q = "VACUUM (ANALYZE)"
	}
	if _, err := s.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("sqlstore: analyze: %w", err)
	}
	return nil
}

// Migrate applies the schema migrations this build knows and not the database yet.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, math.MaxInt64)
}

// migrateTo applies the migrations up to version.
func (s *Store) migrateTo(ctx context.Context, version int64) error {
	p, err := s.migrations()
	if err != nil {
		return err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

func (s *Store) migrations() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations/"+s.cfg.dialect.kind.dir())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	p, err := goose.NewProvider(s.cfg.dialect.kind.goose(), s.db, sub)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	return p, nil
}

// Migration is one schema migration this build knows, and whether the database has it.
type Migration struct {
	Version   int64
	Name      string // its file
	Applied   bool
	AppliedAt time.Time // zero while pending
}

// MigrationStatus lists the migrations this build knows, oldest first, with whether the
// database has each.
func (s *Store) MigrationStatus(ctx context.Context) ([]Migration, error) {
	p, err := s.migrations()
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migration status: %w", err)
	}
	out := make([]Migration, len(st))
	for i, m := range st {
		out[i] = Migration{Version: m.Source.Version, Name: path.Base(m.Source.Path), Applied: m.State == goose.StateApplied, AppliedAt: m.AppliedAt}
	}
	return out, nil
}

// DB returns the underlying pool (for tools and tests).
func (s *Store) DB() *sql.DB { return s.db }

// SkipsLocked reports whether an acquisition skips the rows another transaction holds
// locked (PostgreSQL, MySQL: FOR UPDATE SKIP LOCKED) rather than wait for them (SQLite, whose
// transactions take the database's write lock at once).
func (s *Store) SkipsLocked() bool { return s.d().kind != sqlite }

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }

// Begin starts a transaction.
func (s *Store) Begin(ctx context.Context) (store.Tx, error) {
	tx, release, err := s.cfg.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	return &Tx{executor: executor{cfg: s.cfg, q: tx, tx: tx}, release: release}, nil
}

// begin starts a transaction. On SQLite it first takes the gate at ctx's priority, unless
// held says the caller holds it already; release gives it back (once, however often it is
// called) and must be called when the transaction ends.
func (c *config) begin(ctx context.Context, held bool) (tx *sql.Tx, release func(), err error) {
	release = func() {}
	if c.gate != nil && !held {
		if err := c.gate.enter(ctx, store.PriorityOf(ctx)); err != nil {
			return nil, nil, fmt.Errorf("sqlstore: begin: %w", err)
		}
		release = sync.OnceFunc(c.gate.leave)
	}
	var opts *sql.TxOptions
	if c.dialect.kind == mysqlKind {
		// InnoDB's default REPEATABLE READ takes gap locks on locking reads, which would
		// make TriggersLockDue block inserts of unrelated triggers.
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	tx, err = c.db.BeginTx(ctx, opts)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("sqlstore: begin: %w", err)
	}
	c.transactions.Add(1)
	if c.byOp != nil {
		c.byOp.add(false, true)
	}
	return tx, release, nil
}

// Tx is a store.Tx.
type Tx struct {
	executor
	release func() // see config.begin
}

// Commit commits the transaction.
func (t *Tx) Commit() error {
	err := t.tx.Commit()
	t.release()
	if err != nil {
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	return nil
}

// Rollback rolls the transaction back; after Commit it does nothing.
func (t *Tx) Rollback() error {
	err := t.tx.Rollback()
	t.release()
	if err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("sqlstore: rollback: %w", err)
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// executor implements store.Querier on the pool (tx nil) or in a transaction.
type executor struct {
	cfg *config
	q   querier
	tx  *sql.Tx
	// held says the executor's caller holds SQLite's gate (urgently) for all its statements.
	held bool
}

func (e *executor) d() *dialect { return &e.cfg.dialect }

// enter takes SQLite's gate for one statement outside a transaction; the returned func gives
// it back. Elsewhere, in a transaction, or with the gate held, it does nothing.
func (e *executor) enter(ctx context.Context) (leave func(), err error) {
	if e.cfg.gate == nil || e.tx != nil || e.held {
		return func() {}, nil
	}
	if err := e.cfg.gate.enter(ctx, store.PriorityOf(ctx)); err != nil {
		return nil, fmt.Errorf("sqlstore: wait for the connection: %w", err)
	}
	return e.cfg.gate.leave, nil
}

func (e *executor) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	leave, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	e.count()
	return e.q.ExecContext(ctx, e.d().rebind(query), args...)
}

func (e *executor) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	leave, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	e.count()
	return e.q.QueryContext(ctx, e.d().rebind(query), args...)
}

func (e *executor) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	leave, err := e.enter(ctx)
	if err != nil {
		// A canceled context: the pool gives the Row the same error.
		return e.q.QueryRowContext(ctx, "SELECT 1")
	}
	defer leave()
	e.count()
	return e.q.QueryRowContext(ctx, e.d().rebind(query), args...)
}

// urgently runs fn ahead of every other caller waiting for SQLite's connection, holding the
// gate once for all of fn's statements: the writes the cluster judges the node alive by must
// wait for at most the transaction in progress, not queue behind the node's own acquisition
// rounds and claims (gate.go). Elsewhere it runs fn as it is.
func (e *executor) urgently(ctx context.Context, fn func(e *executor) error) error {
	if e.cfg.gate == nil || e.tx != nil || e.held {
		return fn(e)
	}
	if err := e.cfg.gate.enter(ctx, store.PriorityUrgent); err != nil {
		return fmt.Errorf("sqlstore: wait for the connection: %w", err)
	}
	defer e.cfg.gate.leave()
	return fn(&executor{cfg: e.cfg, q: e.q, held: true})
}

func (e *executor) count() {
	e.cfg.statements.Add(1)
	if e.tx == nil {
		e.cfg.transactions.Add(1)
	}
	if e.cfg.byOp != nil {
		e.cfg.byOp.add(true, e.tx == nil)
	}
}

// inTx runs fn in the current transaction, or in a new one committed when fn succeeds. It is
// for operations that need several statements to be atomic.
func (e *executor) inTx(ctx context.Context, fn func(e *executor) error) error {
	if e.tx != nil {
		return fn(e)
	}
	tx, release, err := e.cfg.begin(ctx, e.held)
	if err != nil {
		return err
	}
	defer release()
	if err := fn(&executor{cfg: e.cfg, q: tx, tx: tx}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	return nil
}

// deadlockBackoff pauses a few milliseconds, growing, so the other transaction can finish.
var deadlockBackoff = backoff.Policy{Initial: 5 * time.Millisecond, Max: 80 * time.Millisecond, Jitter: 0.5}

// retryDeadlock is inTx, run again (up to 5 times in all) when the database rolled it back to
// break a deadlock. Inside a caller's transaction it runs fn once: the deadlock rolled back
// the caller's whole transaction, which only the caller can run again.
func (e *executor) retryDeadlock(ctx context.Context, fn func(e *executor) error) error {
	return backoff.Retry(ctx, clock.Real{}, deadlockBackoff, 5, func(ctx context.Context) error {
		err := e.inTx(ctx, fn)
		if err != nil && (e.tx != nil || !isDeadlock(err)) {
			return backoff.Permanent(err)
		}
		return err
	})
}

// insertID runs an INSERT of one row and returns the new row's id.
func (e *executor) insertID(ctx context.Context, query string, args ...any) (int64, error) {
	if e.d().returning {
		var id int64
		err := e.queryRow(ctx, query+" RETURNING id", args...).Scan(&id)
		return id, err
	}
	res, err := e.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// DBNow returns the database's clock in Unix milliseconds.
func (e *executor) DBNow(ctx context.Context) (int64, error) {
	var now int64
	if err := e.queryRow(ctx, "SELECT "+e.d().nowMillis()).Scan(&now); err != nil {
		return 0, fmt.Errorf("sqlstore: database clock: %w", err)
	}
	return now, nil
}

func affected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: rows affected: %w", err)
	}
	return n, nil
}

// scanInt64s reads a single-column result.
// likeEscape escapes LIKE's wildcards for a pattern given ESCAPE '!': '!' escapes the same
// way in every dialect ('\\' does not in MySQL).
var likeEscape = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

func scanInt64s(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const defaultLimit = 100

func limitOr(n int) int {
	if n <= 0 {
		return defaultLimit
	}
	return n
}
