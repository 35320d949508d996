package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// dayMillis is one UTC day, the span of a history partition.
const dayMillis = int64(24 * time.Hour / time.Millisecond)

// historyPartitionName matches the day partitions (not executions_default), named by day so
// a partition's bounds follow from its name.
var historyPartitionName = regexp.MustCompile(`^executions_p([0-9]{8})$`)

// partitionLockTimeout bounds how long creating or dropping a partition waits for its locks.
// Dropping one takes an exclusive lock on the history, which waits for the transactions that
// are writing to it and holds back the ones that come after: better to give up and try at
// the next run than to stall the fires.
const partitionLockTimeout = "2s"

func historyPartition(dayStart int64) store.HistoryPartition {
	t := time.UnixMilli(dayStart).UTC()
	return store.HistoryPartition{Day: t.Format("2006-01-02"), Name: "executions_p" + t.Format("20060102"),
		From: dayStart, To: dayStart + dayMillis}
}

// HistoryPartitions lists the day partitions from the catalogue (PostgreSQL only).
func (e *executor) HistoryPartitions(ctx context.Context) ([]store.HistoryPartition, error) {
	if e.d().kind != postgres {
		return nil, nil
	}
	rows, err := e.query(ctx, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"+
		" WHERE i.inhparent = 'executions'::regclass")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list history partitions: %w", err)
	}
	defer rows.Close()
	var ps []store.HistoryPartition
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("sqlstore: list history partitions: %w", err)
		}
		m := historyPartitionName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		day, err := time.Parse("20060102", m[1])
		if err != nil {
			return nil, fmt.Errorf("sqlstore: history partition %q: %w", name, err)
		}
		ps = append(ps, historyPartition(day.UnixMilli()))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: list history partitions: %w", err)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].From < ps[j].From })
	return ps, nil
}

// HistoryPartitionsEnsure creates the missing day partitions from now's day to ahead days
// on. Each is made as a plain table, given the rows of its day that the default partition
// took, and attached: attaching checks that the default partition holds none of its day,
// which CREATE TABLE ... PARTITION OF would fail on instead.
func (e *executor) HistoryPartitionsEnsure(ctx context.Context, now int64, ahead int) ([]string, error) {
	if e.d().kind != postgres {
		return nil, nil
	}
	have, err := e.HistoryPartitions(ctx)
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, p := range have {
		exists[p.Name] = true
	}
	var created []string
	today := now - ((now%dayMillis)+dayMillis)%dayMillis
	for i := 0; i <= ahead; i++ {
		p := historyPartition(today + int64(i)*dayMillis)
		if exists[p.Name] {
			continue
		}
		err := e.inTx(ctx, func(e *executor) error {
			stmts := []string{
				"SET LOCAL lock_timeout = '" + partitionLockTimeout + "'",
				"CREATE TABLE " + p.Name + " (LIKE executions INCLUDING DEFAULTS)",
				fmt.Sprintf("INSERT INTO %s SELECT * FROM executions_default WHERE scheduled_at >= %d AND scheduled_at < %d", p.Name, p.From, p.To),
				fmt.Sprintf("DELETE FROM executions_default WHERE scheduled_at >= %d AND scheduled_at < %d", p.From, p.To),
				fmt.Sprintf("ALTER TABLE executions ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d)", p.Name, p.From, p.To),
			}
			for _, q := range stmts {
				if _, err := e.exec(ctx, q); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return created, fmt.Errorf("sqlstore: create history partition %s: %w", p.Name, err)
		}
		created = append(created, p.Day)
	}
	return created, nil
}

// errKeepPartition rolls back the drop of a partition a late fire ended in meanwhile, or
// whose alarm became pending.
var errKeepPartition = errors.New("a late fire or an undelivered alarm in the partition")

// HistoryDropPartitions drops the old day partitions whose every row was fired before the
// horizon. The check, the count and the deletion of the output lines run first without
// blocking anyone; then the history is locked (the exclusive lock DROP needs anyway, taken on
// the parent first, in the order the inserts take theirs, so neither waits on the other in a
// cycle) and the check and the count are made again, since a run of that day may have ended
// in between: a late fire (or a new pending alarm) keeps the partition, a row fired before the
// horizon has its output deleted too. The lock waits at most partitionLockTimeout.
func (e *executor) HistoryDropPartitions(ctx context.Context, firedBefore int64) ([]string, int64, error) {
	if e.d().kind != postgres {
		return nil, 0, nil
	}
	ps, err := e.HistoryPartitions(ctx)
	if err != nil {
		return nil, 0, err
	}
	var days []string
	var total int64
	for _, p := range ps {
		if p.To > firedBefore {
			break
		}
		var n int64
		dropped := false
		// A partition stays while it holds a late fire (ExecutionsDeleteFiredBefore takes the
		// rest) or an alarm not delivered yet (retention must not take it with the row). Each
		// test apart, so that each reads its own index (the alarm ones are partial).
		keep := func(e *executor) (bool, error) {
			var y bool
			err := e.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+p.Name+" WHERE fired_at >= ?)"+
				" OR EXISTS (SELECT 1 FROM "+p.Name+" WHERE alarm_state = 'pending')"+
				" OR EXISTS (SELECT 1 FROM "+p.Name+" WHERE alarm_state = 'sending')", firedBefore).Scan(&y)
			return y, err
		}
		count := func(e *executor) (int64, error) {
			var c int64
			err := e.queryRow(ctx, "SELECT COUNT(*) FROM "+p.Name).Scan(&c)
			return c, err
		}
		deleteLogs := func(e *executor) error {
			_, err := e.exec(ctx, "DELETE FROM execution_logs WHERE execution_id IN (SELECT id FROM "+p.Name+")")
			return err
		}
		err := e.inTx(ctx, func(e *executor) error {
			if y, err := keep(e); err != nil || y {
				return err
			}
			var err error
			if n, err = count(e); err != nil {
				return err
			}
			if err := deleteLogs(e); err != nil {
				return err
			}
			if _, err := e.exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
				return err
			}
			if _, err := e.exec(ctx, "LOCK TABLE executions IN ACCESS EXCLUSIVE MODE"); err != nil {
				return err
			}
			if y, err := keep(e); err != nil || y {
				return cmp.Or(err, errKeepPartition) // keeps the output lines deleted above too
			}
			again, err := count(e)
			if err != nil {
				return err
			}
			if again != n {
				n = again
				if err := deleteLogs(e); err != nil {
					return err
				}
			}
			if _, err := e.exec(ctx, "DROP TABLE "+p.Name); err != nil {
				return err
			}
			dropped = true
			return nil
		})
		if errors.Is(err, errKeepPartition) {
			continue
		}
		if err != nil {
			return days, total, fmt.Errorf("sqlstore: drop history partition %s: %w", p.Name, err)
		}
		if dropped {
			days = append(days, p.Day)
			total += n
		}
	}
	return days, total, nil
}
