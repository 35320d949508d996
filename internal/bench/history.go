package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sundial-scheduler/sundial/maintenance"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// HistoryConfig is the history scenario: Rows ended executions over Days days (ending now)
// of Jobs jobs, loaded straight into the history, then the reads and the retention timed.
type HistoryConfig struct {
	Rows int
	Days int
	Jobs int
	// Repeat is how many times each read runs; the median is reported.
	Repeat int
	// Fire is the steady load fired once alone and once while a day's retention runs (0
	// triggers: not measured).
	Fire SteadyConfig
	// Skip loading when the history already holds Rows rows (a second run on the same store).
	Reuse bool
}

// HistoryResult is what the history scenario measured.
type HistoryResult struct {
	Scenario string        `json:"scenario"`
	Dialect  string        `json:"dialect"`
	Rows     int64         `json:"rows"`
	Days     int           `json:"days"`
	Load     time.Duration `json:"load_ns"`
	// Partitions is how many day partitions the history has (PostgreSQL).
	Partitions int            `json:"partitions"`
	Reads      []HistoryRead  `json:"reads"`
	Retention  HistoryRetains `json:"retention"`
	// RetentionFiring is the second day's retention, run beside the steady load.
	RetentionFiring HistoryRetains `json:"retention_firing"`
	// FiresAlone and FiresRetaining are the steady load's achieved fires/s without and with
	// a day's retention running beside it.
	FiresAlone     float64 `json:"fires_alone_per_s,omitempty"`
	FiresRetaining float64 `json:"fires_retaining_per_s,omitempty"`
	// Plans are EXPLAIN outputs of the statements that show partition pruning (PostgreSQL).
	Plans map[string]string `json:"plans,omitempty"`
}

// HistoryRead is one read's median time and the rows it returned.
type HistoryRead struct {
	Name   string        `json:"name"`
	Median time.Duration `json:"median_ns"`
	Rows   int           `json:"rows"`
	// Buffers is how many 8 KiB pages the history's part of the read touched (PostgreSQL:
	// EXPLAIN (ANALYZE, BUFFERS) of the same statement, shared hits and reads): unlike the
	// time, it does not depend on what else the machine runs.
	Buffers int64 `json:"buffers,omitempty"`
}

// HistoryRetains is one day's retention: how long it took and what it deleted.
type HistoryRetains struct {
	Took    time.Duration `json:"took_ns"`
	Deleted int64         `json:"deleted"`
}

func (r HistoryResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history %s: %d rows over %d days (%d partitions), loaded in %s\n", r.Dialect, r.Rows, r.Days, r.Partitions, r.Load.Round(time.Millisecond))
	for _, q := range r.Reads {
		fmt.Fprintf(&b, "  %-28s %10s  (%d rows", q.Name, q.Median.Round(10*time.Microsecond), q.Rows)
		if q.Buffers > 0 {
			fmt.Fprintf(&b, ", %d buffers", q.Buffers)
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(&b, "  %-28s %10s  (%d rows)\n", "retention of one day", r.Retention.Took.Round(time.Millisecond), r.Retention.Deleted)
	if r.FiresAlone > 0 {
		fmt.Fprintf(&b, "  fires/s alone %.0f, with a day's retention running %.0f (%+.1f %%); that retention took %s (%d rows)\n",
			r.FiresAlone, r.FiresRetaining, 100*(r.FiresRetaining-r.FiresAlone)/r.FiresAlone,
			r.RetentionFiring.Took.Round(time.Millisecond), r.RetentionFiring.Deleted)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Plans)) {
		fmt.Fprintf(&b, "  EXPLAIN %s:\n", name)
		// A plan over every partition repeats one line per partition: the first ones show it.
		lines := strings.Split(strings.TrimRight(r.Plans[name], "\n"), "\n")
		for i, l := range lines {
			if i == 12 {
				fmt.Fprintf(&b, "    … %d more lines (-o json has them all)\n", len(lines)-i)
				break
			}
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}

const dayMs = int64(24 * time.Hour / time.Millisecond)

// History runs the history scenario.
func History(ctx context.Context, opts Options, cfg HistoryConfig) (HistoryResult, error) {
	if cfg.Days < 3 {
		return HistoryResult{}, fmt.Errorf("history: %d days: want at least 3", cfg.Days)
	}
	cfg.Repeat = max(cfg.Repeat, 1)
	cfg.Jobs = max(cfg.Jobs, 1)
	st, err := sqlstore.Open(ctx, opts.DSN)
	if err != nil {
		return HistoryResult{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return HistoryResult{}, err
	}
	res := HistoryResult{Scenario: "history", Dialect: dialectOf(opts.DSN), Days: cfg.Days}
	now := time.Now().UnixMilli()
	today := now - now%dayMs
	first := today - int64(cfg.Days)*dayMs // the days loaded: [first, today)
	if _, err := st.HistoryPartitionsEnsure(ctx, first, cfg.Days+maintenance.HistoryAhead); err != nil {
		return res, err
	}
	if err := st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM executions").Scan(&res.Rows); err != nil {
		return res, err
	}
	if !cfg.Reuse || res.Rows == 0 {
		if res.Rows > 0 {
			return res, fmt.Errorf("history: the store's history already holds %d rows: give an empty database (or --reuse)", res.Rows)
		}
		t0 := time.Now()
		if err := loadHistory(ctx, st, res.Dialect, cfg, first); err != nil {
			return res, err
		}
		res.Load = time.Since(t0)
		res.Rows = int64(cfg.Rows)
		if err := st.Analyze(ctx); err != nil {
			return res, err
		}
	}
	ps, err := st.HistoryPartitions(ctx)
	if err != nil {
		return res, err
	}
	res.Partitions = len(ps)

	// The reads of the console and the API: page 1 and a page deep in the middle (keyset).
	var midID int64
	var lo, hi int64
	if err := st.DB().QueryRowContext(ctx, "SELECT MIN(id), MAX(id) FROM executions").Scan(&lo, &hi); err != nil {
		return res, err
	}
	midID = lo + (hi-lo)/2
	mid := first + int64(cfg.Days)*dayMs/2
	hour := int64(time.Hour / time.Millisecond)
	// The history's part of each list as ExecutionList writes it, for its buffer count.
	cols := "SELECT id, job_id, scheduled_at, fired_at, state, cause, node FROM executions WHERE 1 = 1"
	sqlOf := map[string]string{
		"list newest":               cols + " ORDER BY id DESC LIMIT 50",
		"list deep page":            cols + fmt.Sprintf(" AND id < %d ORDER BY id DESC LIMIT 50", midID),
		"by job":                    cols + " AND job_id = 7 ORDER BY id DESC LIMIT 50",
		"by job deep page":          cols + fmt.Sprintf(" AND id < %d AND job_id = 7 ORDER BY id DESC LIMIT 50", midID),
		"by state failed":           cols + " AND state = 'failed' ORDER BY id DESC LIMIT 50",
		"by state failed deep page": cols + fmt.Sprintf(" AND id < %d AND state = 'failed' ORDER BY id DESC LIMIT 50", midID),
		"fired in one hour":         cols + fmt.Sprintf(" AND fired_at >= %d AND fired_at < %d ORDER BY fired_at DESC, id DESC LIMIT 50", mid, mid+hour),
		"report refresh of one day": fmt.Sprintf("SELECT job_id, state, COUNT(*) FROM executions WHERE fired_at >= %d AND fired_at < %d GROUP BY job_id, state", mid-mid%dayMs, mid-mid%dayMs+dayMs),
	}
	reads := []struct {
		name string
		run  func() (int, error)
	}{
		{"list newest", listOf(ctx, st, store.ExecutionFilter{Desc: true})},
		{"list deep page", listOf(ctx, st, store.ExecutionFilter{Desc: true, AfterID: midID})},
		{"by job", listOf(ctx, st, store.ExecutionFilter{JobID: 7, Desc: true})},
		{"by job deep page", listOf(ctx, st, store.ExecutionFilter{JobID: 7, Desc: true, AfterID: midID})},
		{"by state failed", listOf(ctx, st, store.ExecutionFilter{State: store.ExecFailed, Desc: true})},
		{"by state failed deep page", listOf(ctx, st, store.ExecutionFilter{State: store.ExecFailed, Desc: true, AfterID: midID})},
		{"fired in one hour", listOf(ctx, st, store.ExecutionFilter{FiredFrom: mid, FiredTo: mid + hour, Desc: true})},
		{"report (30 days, dashboard)", func() (int, error) {
			day := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(maintenance.DayLayout) }
			rs, err := st.ReportsDaily(ctx, day(first), day(today), 0, nil)
			return len(rs), err
		}},
		{"report refresh of one day", func() (int, error) {
			return st.ReportsRefresh(ctx, time.UnixMilli(mid).UTC().Format(maintenance.DayLayout))
		}},
	}
	// The dashboard reads report rows the leader computed: compute them once for every day.
	for d := first; d < today; d += dayMs {
		if _, err := st.ReportsRefresh(ctx, time.UnixMilli(d).UTC().Format(maintenance.DayLayout)); err != nil {
			return res, err
		}
	}
	for _, r := range reads {
		var times []time.Duration
		var n int
		for i := 0; i <= cfg.Repeat; i++ { // the first run warms the cache and is not counted
			t0 := time.Now()
			n, err = r.run()
			if err != nil {
				return res, fmt.Errorf("history: %s: %w", r.name, err)
			}
			if i > 0 {
				times = append(times, time.Since(t0))
			}
		}
		slices.Sort(times)
		read := HistoryRead{Name: r.name, Median: times[len(times)/2], Rows: n}
		if q, ok := sqlOf[r.name]; ok && res.Dialect == "postgres" {
			if read.Buffers, err = buffersOf(ctx, st.DB(), q); err != nil {
				return res, err
			}
		}
		res.Reads = append(res.Reads, read)
	}
	if res.Dialect == "postgres" {
		res.Plans = map[string]string{}
		for name, q := range map[string]string{
			"twin probe of an insert (one partition)":    fmt.Sprintf("SELECT 1 FROM executions h WHERE h.trigger_id = 7 AND h.scheduled_at = %d AND h.attempt = 0 AND h.shard_index = 0", mid),
			"retention batch (fired before the horizon)": fmt.Sprintf("SELECT id FROM executions WHERE fired_at < %d ORDER BY fired_at LIMIT 1000", first+2*dayMs),
			"list by job, page 1":                        "SELECT id FROM executions WHERE job_id = 7 ORDER BY id DESC LIMIT 50",
		} {
			plan, err := explain(ctx, st.DB(), q)
			if err != nil {
				return res, err
			}
			res.Plans[name] = plan
		}
	}

	// One day's retention: the oldest day.
	t0 := time.Now()
	res.Retention.Deleted, err = maintenance.DeleteOld(ctx, st, time.UnixMilli(first+dayMs), nil, slog.New(slog.DiscardHandler))
	res.Retention.Took = time.Since(t0)
	if err != nil {
		return res, err
	}

	if cfg.Fire.Triggers > 0 {
		alone, err := Steady(ctx, opts, cfg.Fire)
		if err != nil {
			return res, err
		}
		res.FiresAlone = alone.Achieved
		// The second day goes while the same load fires, starting with the measured window.
		var wg sync.WaitGroup
		var retainErr error
		rctx, stop := context.WithCancel(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(cfg.Fire.Warmup):
			case <-rctx.Done():
				return
			}
			t0 := time.Now()
			n, err := maintenance.DeleteOld(rctx, st, time.UnixMilli(first+2*dayMs), nil, slog.New(slog.DiscardHandler))
			res.RetentionFiring = HistoryRetains{Took: time.Since(t0), Deleted: n}
			if err != nil && rctx.Err() == nil {
				retainErr = err
			}
		}()
		busy, err := Steady(ctx, opts, cfg.Fire)
		stop()
		wg.Wait()
		if err != nil {
			return res, err
		}
		res.FiresRetaining = busy.Achieved
		if retainErr != nil {
			return res, retainErr
		}
	}
	return res, nil
}

func listOf(ctx context.Context, st store.Store, f store.ExecutionFilter) func() (int, error) {
	f.Limit = 50
	return func() (int, error) {
		xs, err := st.ExecutionList(ctx, f)
		return len(xs), err
	}
}

// buffersOf runs q under EXPLAIN (ANALYZE, BUFFERS) and returns the pages it touched.
func buffersOf(ctx context.Context, db *sql.DB, q string) (int64, error) {
	var out string
	if err := db.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q).Scan(&out); err != nil {
		return 0, fmt.Errorf("history: explain analyze %s: %w", q, err)
	}
	var plans []struct {
		Plan struct {
			Hit  int64 `json:"Shared Hit Blocks"`
			Read int64 `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		return 0, fmt.Errorf("history: explain analyze %s: %q: %v", q, out, err)
	}
	return plans[0].Plan.Hit + plans[0].Plan.Read, nil
}

func explain(ctx context.Context, db *sql.DB, q string) (string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN (COSTS OFF) "+q)
	if err != nil {
		return "", fmt.Errorf("history: explain %s: %w", q, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", err
		}
		b.WriteString(l + "\n")
	}
	return b.String(), rows.Err()
}

func dialectOf(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "postgres"
	case strings.HasPrefix(dsn, "mysql://"):
		return "mysql"
	}
	return "sqlite"
}

// historyCols are the columns the load writes; the others take their defaults (MySQL's text
// columns have none, so they are written too).
var historyCols = []string{"id", "job_id", "trigger_id", "scheduled_at", "fired_at", "cause", "node", "state",
	"started_at", "finished_at", "trigger_msg", "handle_msg", "data", "params"}

// historyRow is row i of n over the days from first: ids grow with the scheduled time, as
// they do when fires end in order; one trigger per job, so fire keys never collide.
func historyRow(i, n int, cfg HistoryConfig, first int64) []any {
	span := int64(cfg.Days) * dayMs
	sched := first + int64(float64(i)*float64(span)/float64(n))
	job := int64(i%cfg.Jobs + 1)
	state := "succeeded"
	switch i % 100 {
	case 0, 1, 2:
		state = "failed"
	case 3:
		state = "timed_out"
	}
	return []any{int64(i + 1), job, job, sched, sched + 3, "schedule", "n1", state, sched + 5, sched + 105, "", "", "", ""}
}

// loadHistory writes the rows: COPY on PostgreSQL, multi-row inserts in transactions of
// 50,000 rows elsewhere. The id sequence is moved past them afterwards.
func loadHistory(ctx context.Context, st *sqlstore.Store, dialect string, cfg HistoryConfig, first int64) error {
	n := cfg.Rows
	if dialect == "postgres" {
		conn, err := st.DB().Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		err = conn.Raw(func(dc any) error {
			pc := dc.(*stdlib.Conn).Conn()
			i := 0
			_, err := pc.CopyFrom(ctx, pgx.Identifier{"executions"}, historyCols, pgx.CopyFromFunc(func() ([]any, error) {
				if i == n {
					return nil, nil
				}
				i++
				return historyRow(i-1, n, cfg, first), nil
			}))
			return err
		})
		if err != nil {
			return fmt.Errorf("history: copy: %w", err)
		}
		_, err = st.DB().ExecContext(ctx, "SELECT setval('executions_history_id_seq', $1)", n+1)
		return err
	}
	const perStmt, perTx = 500, 50000
	ph := "(" + strings.TrimSuffix(strings.Repeat("?,", len(historyCols)), ",") + ")"
	for start := 0; start < n; start += perTx {
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for s := start; s < min(start+perTx, n); s += perStmt {
			e := min(s+perStmt, n)
			args := make([]any, 0, (e-s)*len(historyCols))
			for i := s; i < e; i++ {
				args = append(args, historyRow(i, n, cfg, first)...)
			}
			q := "INSERT INTO executions (" + strings.Join(historyCols, ", ") + ") VALUES " +
				strings.TrimSuffix(strings.Repeat(ph+",", e-s), ",")
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				tx.Rollback()
				return fmt.Errorf("history: insert: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	// The live table's ids continue above the loaded history's.
	switch dialect {
	case "mysql":
		_, err := st.DB().ExecContext(ctx, fmt.Sprintf("ALTER TABLE executions_live AUTO_INCREMENT = %d", n+1))
		return err
	default:
		_, err := st.DB().ExecContext(ctx, "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'executions_live'", n)
		return err
	}
}
