package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sundial-scheduler/sundial/store"
)

// LoadTriggers bulk-loads n triggers, row(i) giving the i-th, for benchmarks and tools that
// fill a store with millions of rows: COPY on PostgreSQL, multi-row INSERTs of 500 rows in
// transactions of 50,000 elsewhere. It streams: row is called once per trigger and nothing is
// kept. Unlike TriggerInsert it checks no paused group (the state is row's), maps no
// constraint error and fills no ID; State, Priority and Version default as TriggerInsert's do.
func (s *Store) LoadTriggers(ctx context.Context, n int, row func(i int) store.Trigger) error {
	now := s.cfg.now()
	values := func(i int) []any {
		t := row(i)
		if t.State == "" {
			t.State = store.TriggerWaiting
		}
		if t.Priority == 0 {
			t.Priority = store.DefaultPriority
		}
		return []any{t.JobID, t.Group, t.Name, t.Description, string(t.Kind), t.Spec, t.TimeZone, t.StartAt, t.EndAt,
			nullString(t.CalendarName), int64(t.Priority), t.MisfirePolicy, string(t.State), t.ErrorMessage, t.NextFireAt,
			t.PrevFireAt, t.TimesFired, int64(1), now, now, t.Params, "", t.JitterMs, t.DSTPolicy, t.CatchUpWindow, t.CatchUp, t.RunLimit,
			t.ZoneOf, strings.Join(t.Zones, ",")}
	}
	cols := strings.Split(triggerCols[len("id, "):], ", ")
	if s.cfg.dialect.kind == postgres {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sqlstore: load %d triggers: %w", n, err)
		}
		defer conn.Close()
		return conn.Raw(func(dc any) error {
			i := 0
			src := pgx.CopyFromFunc(func() ([]any, error) {
				if i == n {
					return nil, nil
				}
				i++
				return values(i - 1), nil
			})
			s.cfg.statements.Add(1)
			s.cfg.transactions.Add(1)
			if _, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{"triggers"}, cols, src); err != nil {
				return fmt.Errorf("sqlstore: load %d triggers: copy: %w", n, err)
			}
			return nil
		})
	}
	const rows, perTx = 500, 50000
	for lo := 0; lo < n; lo += perTx {
		err := store.InTx(ctx, s, func(q store.Querier) error {
			e := &q.(*Tx).executor
			for c := lo; c < min(lo+perTx, n); c += rows {
				k := min(c+rows, n) - c
				args := make([]any, 0, k*len(cols))
				for i := c; i < c+k; i++ {
					args = append(args, values(i)...)
				}
				q := "INSERT INTO triggers (" + strings.Join(cols, ", ") + ") VALUES " +
					strings.TrimSuffix(strings.Repeat(placeholders(len(cols))+", ", k), ", ")
				if _, err := e.exec(ctx, q, args...); err != nil {
					return fmt.Errorf("sqlstore: load triggers %d–%d: %w", c, c+k-1, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
