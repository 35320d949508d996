package sqlstore

import (
	"context"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

const auditCols = "id, at, actor, source, action, target_kind, target, app, before_json, after_json"

func scanAudit(r rowScanner) (*store.AuditEntry, error) {
	var a store.AuditEntry
	err := r.Scan(&a.ID, &a.At, &a.Actor, &a.Source, &a.Action, &a.TargetKind, &a.Target, &a.App, &a.Before, &a.After)
	return &a, err
}

// AuditInsert appends an entry to the audit log.
func (e *executor) AuditInsert(ctx context.Context, a *store.AuditEntry) error {
	if a.Action == "" {
		return fmt.Errorf("sqlstore: audit entry without an action")
	}
	if a.At == 0 {
		a.At = e.cfg.now()
	}
	id, err := e.insertID(ctx, "INSERT INTO audit_log (at, actor, source, action, target_kind, target, app, before_json, after_json) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", a.At, a.Actor, a.Source, a.Action, a.TargetKind, a.Target, a.App, a.Before, a.After)
	if err != nil {
		return fmt.Errorf("sqlstore: insert audit entry %s %s: %w", a.Action, a.Target, err)
	}
	a.ID = id
	return nil
}

// AuditList lists audit entries newest first.
func (e *executor) AuditList(ctx context.Context, f store.AuditFilter) ([]*store.AuditEntry, error) {
	q, args := "SELECT "+auditCols+" FROM audit_log WHERE 1 = 1", []any{}
	add := func(cond string, v any) {
		q += " AND " + cond
		args = append(args, v)
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.TargetKind != "" {
		add("target_kind = ?", f.TargetKind)
	}
	if f.Target != "" {
		add("target = ?", f.Target)
	}
	if f.From != 0 {
		add("at >= ?", f.From)
	}
	if f.To != 0 {
		add("at < ?", f.To)
	}
	if f.BeforeID != 0 {
		add("id < ?", f.BeforeID)
	}
	rows, err := e.query(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, limitOr(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list audit log: %w", err)
	}
	return scanAll(rows, scanAudit, "audit log")
}

// AuditDeleteBefore deletes the oldest entries older than before, up to limit.
func (e *executor) AuditDeleteBefore(ctx context.Context, before int64, limit int) (int64, error) {
	// MySQL takes no LIMIT in a subquery of IN, so the ids are read first; a sweep runs
	// alone (the maintenance lease), so no one deletes them meanwhile.
	rows, err := e.query(ctx, "SELECT id FROM audit_log WHERE at < ? ORDER BY at, id LIMIT ?", before, limitOr(limit))
	if err != nil {
		return 0, fmt.Errorf("sqlstore: audit retention: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlstore: audit retention: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlstore: audit retention: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := e.exec(ctx, "DELETE FROM audit_log WHERE id IN "+placeholders(len(ids)), ids...)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: audit retention: %w", err)
	}
	return affected(res)
}
