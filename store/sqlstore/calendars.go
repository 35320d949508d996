package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

const calendarCols = "name, description, spec, base_name, time_zone, updated_at"

func scanCalendar(r rowScanner) (*store.Calendar, error) {
	var c store.Calendar
	var base sql.NullString
	err := r.Scan(&c.Name, &c.Description, &c.Spec, &base, &c.Zone, &c.UpdatedAt)
	c.Base = base.String
	return &c, err
}

// CalendarPut inserts or replaces a calendar.
func (e *executor) CalendarPut(ctx context.Context, c *store.Calendar) error {
	if c.Name == "" {
		return errors.New("sqlstore: calendar without a name")
	}
	now := e.cfg.now()
	_, err := e.exec(ctx, "INSERT INTO calendars ("+calendarCols+") VALUES (?, ?, ?, ?, ?, ?)"+
		e.d().upsert("name", "description", "spec", "base_name", "time_zone", "updated_at"),
		c.Name, c.Description, c.Spec, nullString(c.Base), c.Zone, now)
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("calendar %q: base calendar %q: %w", c.Name, c.Base, store.ErrNotFound)
		}
		return fmt.Errorf("sqlstore: put calendar %q: %w", c.Name, err)
	}
	c.UpdatedAt = now
	return nil
}

// CalendarGet returns the calendar name.
func (e *executor) CalendarGet(ctx context.Context, name string) (*store.Calendar, error) {
	c, err := scanCalendar(e.queryRow(ctx, "SELECT "+calendarCols+" FROM calendars WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("calendar %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: get calendar %q: %w", name, err)
	}
	return c, nil
}

// CalendarList lists calendars by name.
func (e *executor) CalendarList(ctx context.Context, afterName string, limit int) ([]*store.Calendar, error) {
	rows, err := e.query(ctx, "SELECT "+calendarCols+" FROM calendars WHERE name > ? ORDER BY name LIMIT ?", afterName, limitOr(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list calendars: %w", err)
	}
	defer rows.Close()
	var out []*store.Calendar
	for rows.Next() {
		c, err := scanCalendar(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list calendars: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CalendarDelete deletes a calendar no trigger or calendar refers to; the foreign keys
// enforce that.
func (e *executor) CalendarDelete(ctx context.Context, name string) error {
	res, err := e.exec(ctx, "DELETE FROM calendars WHERE name = ?", name)
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("calendar %q: %w", name, store.ErrInUse)
		}
		return fmt.Errorf("sqlstore: delete calendar %q: %w", name, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("calendar %q: %w", name, store.ErrNotFound)
	}
	return nil
}
