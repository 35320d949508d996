package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Audit describes a change a caller is about to make, for the audit log. A caller puts it
// in the context (WithAudit) of the write; InTx, which every audited write goes through,
// snapshots the target before and after the write and appends the entry in the write's own
// transaction, so the log has exactly the changes that were committed.
type Audit struct {
	Actor, Source, Action string
	TargetKind, Target    string
	App                   string
	// Snapshot reads the target as it stands, inside the transaction; it returns nil when
	// the target does not exist (before a create, after a delete). It may set Target and App
	// (a create learns its id in the after snapshot). Nil for an action with no state, such
	// as a login.
	Snapshot func(ctx context.Context, q Querier) (any, error)
}

type auditKey struct{}

// WithAudit returns ctx carrying the audit description of the change it is for.
func WithAudit(ctx context.Context, a *Audit) context.Context {
	return context.WithValue(ctx, auditKey{}, a)
}

// AuditFrom returns the audit description ctx carries, or nil.
func AuditFrom(ctx context.Context) *Audit {
	a, _ := ctx.Value(auditKey{}).(*Audit)
	return a
}

// InTx runs fn in a transaction of st and commits it. When ctx carries an Audit, the entry
// describing the change is written in the same transaction, with the target's state before
// and after fn. fn must not commit or roll back.
func InTx(ctx context.Context, st Store, fn func(q Querier) error) error {
	tx, err := st.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	a := AuditFrom(ctx)
	var before string
	if a != nil {
		if before, err = a.snapshot(ctx, tx); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if a != nil {
		after, err := a.snapshot(ctx, tx)
		if err != nil {
			return err
		}
		e := &AuditEntry{Actor: a.Actor, Source: a.Source, Action: a.Action, TargetKind: a.TargetKind, Target: a.Target,
			App: a.App, Before: before, After: after}
		if err := tx.AuditInsert(ctx, e); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (a *Audit) snapshot(ctx context.Context, q Querier) (string, error) {
	if a.Snapshot == nil {
		return "", nil
	}
	v, err := a.Snapshot(ctx, q)
	if errors.Is(err, ErrNotFound) || (err == nil && v == nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("audit %s %s: %w", a.Action, a.Target, err)
	}
	return RedactJSON(v)
}

// redacted replaces the value of every secret field in the audit log.
const redacted = "[redacted]"

// secretKey reports whether a field name holds a secret: passwords, tokens, keys, hashes of
// them. Job parameters and data are free-form maps, so their keys are judged the same way.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "secret", "token", "hash", "credential", "private_key", "api_key", "apikey"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// RedactJSON encodes v as JSON with the values of secret fields replaced, at any depth.
func RedactJSON(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("audit snapshot: %w", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return "", fmt.Errorf("audit snapshot: %w", err)
	}
	out, err := json.Marshal(redact(tree))
	if err != nil {
		return "", fmt.Errorf("audit snapshot: %w", err)
	}
	return string(out), nil
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if secretKey(k) && x != nil && x != "" {
				t[k] = redacted
				continue
			}
			t[k] = redact(x)
		}
	case []any:
		for i, x := range t {
			t[i] = redact(x)
		}
	}
	return v
}
