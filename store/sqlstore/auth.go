package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/sundial-scheduler/sundial/store"
)

const userCols = "id, name, password_hash, role, scope, scripts, disabled, reset_hash, reset_expires_at, sso_subject, created_at, updated_at"

func scanUser(r rowScanner) (*store.User, error) {
	var u store.User
	err := r.Scan(&u.ID, &u.Name, &u.PasswordHash, &u.Role, &u.Scope, &u.Scripts, &u.Disabled, &u.ResetHash,
		&u.ResetExpiresAt, &u.SSOSubject, &u.CreatedAt, &u.UpdatedAt)
	return &u, err
}

// scopeOr stores an empty scope as every app, as the column's default does.
func scopeOr(scope string) string {
	if scope == "" {
		return store.ScopeAll
	}
	return scope
}

// UserInsert stores u.
func (e *executor) UserInsert(ctx context.Context, u *store.User) error {
	if u.Name == "" {
		return errors.New("sqlstore: user without a name")
	}
	now := e.cfg.now()
	u.Scope = scopeOr(u.Scope)
	id, err := e.insertID(ctx, "INSERT INTO users (name, password_hash, role, scope, scripts, disabled, sso_subject, created_at, updated_at) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", u.Name, u.PasswordHash, string(u.Role), u.Scope, u.Scripts, u.Disabled, u.SSOSubject, now, now)
	if err != nil {
		if isUniqueViolation(err) {
			return &store.ExistsError{Kind: "user", Key: strconv.Quote(u.Name)}
		}
		return fmt.Errorf("sqlstore: insert user %q: %w", u.Name, err)
	}
	u.ID, u.CreatedAt, u.UpdatedAt = id, now, now
	return nil
}

// UserGet returns the user id.
func (e *executor) UserGet(ctx context.Context, id int64) (*store.User, error) {
	return one(scanUser(e.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE id = ?", id)))(fmt.Sprintf("user %d", id))
}

// UserGetByName returns the user called name.
func (e *executor) UserGetByName(ctx context.Context, name string) (*store.User, error) {
	return one(scanUser(e.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE name = ?", name)))(fmt.Sprintf("user %q", name))
}

// UserSetPassword replaces the password hash and clears the reset token.
func (e *executor) UserSetPassword(ctx context.Context, id int64, passwordHash string) error {
	res, err := e.exec(ctx, "UPDATE users SET password_hash = ?, reset_hash = '', reset_expires_at = 0, updated_at = ? WHERE id = ?",
		passwordHash, e.cfg.now(), id)
	return oneRow(res, err, fmt.Sprintf("user %d", id))
}

// UserList lists users by id.
func (e *executor) UserList(ctx context.Context, afterID int64, limit int) ([]*store.User, error) {
	rows, err := e.query(ctx, "SELECT "+userCols+" FROM users WHERE id > ? ORDER BY id LIMIT ?", afterID, limitOr(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list users: %w", err)
	}
	return scanAll(rows, scanUser, "users")
}

// UserUpdate overwrites the user's permissions, disabled flag and reset token.
func (e *executor) UserUpdate(ctx context.Context, u *store.User) error {
	u.Scope = scopeOr(u.Scope)
	now := e.cfg.now()
	res, err := e.exec(ctx, "UPDATE users SET role = ?, scope = ?, scripts = ?, disabled = ?, reset_hash = ?, reset_expires_at = ?, "+
		"updated_at = ? WHERE id = ?", string(u.Role), u.Scope, u.Scripts, u.Disabled, u.ResetHash, u.ResetExpiresAt, now, u.ID)
	if err := oneRow(res, err, fmt.Sprintf("user %d", u.ID)); err != nil {
		return err
	}
	u.UpdatedAt = now
	return nil
}

// UserGetByResetHash finds the user with an outstanding reset token of this hash.
func (e *executor) UserGetByResetHash(ctx context.Context, hash string) (*store.User, error) {
	if hash == "" {
		return nil, fmt.Errorf("reset token: %w", store.ErrNotFound)
	}
	// The hash is a credential: it stays out of the error.
	return one(scanUser(e.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE reset_hash = ?", hash)))("reset token")
}

const tokenCols = "id, user_id, name, hash, prefix, role, scope, scripts, created_at, expires_at, last_used_at"

func scanToken(r rowScanner) (*store.APIToken, error) {
	var t store.APIToken
	err := r.Scan(&t.ID, &t.UserID, &t.Name, &t.Hash, &t.Prefix, &t.Role, &t.Scope, &t.Scripts, &t.CreatedAt, &t.ExpiresAt,
		&t.LastUsedAt)
	return &t, err
}

// scanAll reads every row with scan.
func scanAll[T any](rows *sql.Rows, scan func(rowScanner) (*T, error), what string) ([]*T, error) {
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: list %s: %w", what, err)
	}
	return out, nil
}

// APITokenInsert stores t.
func (e *executor) APITokenInsert(ctx context.Context, t *store.APIToken) error {
	now := e.cfg.now()
	t.Scope = scopeOr(t.Scope)
	id, err := e.insertID(ctx, "INSERT INTO api_tokens (user_id, name, hash, prefix, role, scope, scripts, created_at, expires_at) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", t.UserID, t.Name, t.Hash, t.Prefix, string(t.Role), t.Scope, t.Scripts, now, t.ExpiresAt)
	switch {
	case isForeignKeyViolation(err):
		return fmt.Errorf("token %q: user %d: %w", t.Name, t.UserID, store.ErrNotFound)
	case isUniqueViolation(err):
		return &store.ExistsError{Kind: "token", Key: strconv.Quote(t.Name)}
	case err != nil:
		return fmt.Errorf("sqlstore: insert token %q: %w", t.Name, err)
	}
	t.ID, t.CreatedAt = id, now
	return nil
}

// APITokenGetByHash finds a token by the hash of its secret.
func (e *executor) APITokenGetByHash(ctx context.Context, hash string) (*store.APIToken, error) {
	// The hash is a credential: it stays out of the error.
	return one(scanToken(e.queryRow(ctx, "SELECT "+tokenCols+" FROM api_tokens WHERE hash = ?", hash)))("token")
}

// APITokenList lists tokens by id.
func (e *executor) APITokenList(ctx context.Context, userID, afterID int64, limit int) ([]*store.APIToken, error) {
	q, args := "SELECT "+tokenCols+" FROM api_tokens WHERE id > ?", []any{afterID}
	if userID != 0 {
		q += " AND user_id = ?"
		args = append(args, userID)
	}
	rows, err := e.query(ctx, q+" ORDER BY id LIMIT ?", append(args, limitOr(limit))...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list tokens: %w", err)
	}
	return scanAll(rows, scanToken, "tokens")
}

// APITokenTouch records a use of the token, at most once per minInterval.
func (e *executor) APITokenTouch(ctx context.Context, id, at, minInterval int64) error {
	_, err := e.exec(ctx, "UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND last_used_at <= ?", at, id, at-minInterval)
	if err != nil {
		return fmt.Errorf("sqlstore: touch token %d: %w", id, err)
	}
	return nil
}

// APITokenDelete revokes a token.
func (e *executor) APITokenDelete(ctx context.Context, id int64) error {
	res, err := e.exec(ctx, "DELETE FROM api_tokens WHERE id = ?", id)
	return oneRow(res, err, fmt.Sprintf("token %d", id))
}

// SessionInsert stores s.
func (e *executor) SessionInsert(ctx context.Context, s *store.Session) error {
	now := e.cfg.now()
	_, err := e.exec(ctx, "INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
		s.Hash, s.UserID, now, s.ExpiresAt)
	switch {
	case isForeignKeyViolation(err):
		return fmt.Errorf("session: user %d: %w", s.UserID, store.ErrNotFound)
	case isUniqueViolation(err):
		return fmt.Errorf("session: %w", store.ErrAlreadyExists)
	case err != nil:
		return fmt.Errorf("sqlstore: insert session: %w", err)
	}
	s.CreatedAt = now
	return nil
}

// SessionGet finds a session by the hash of its secret.
func (e *executor) SessionGet(ctx context.Context, hash string) (*store.Session, error) {
	var s store.Session
	err := e.queryRow(ctx, "SELECT hash, user_id, created_at, expires_at FROM sessions WHERE hash = ?", hash).
		Scan(&s.Hash, &s.UserID, &s.CreatedAt, &s.ExpiresAt)
	if err := rowErr(err, "session"); err != nil {
		return nil, err
	}
	return &s, nil
}

// SessionDelete ends a session.
func (e *executor) SessionDelete(ctx context.Context, hash string) error {
	res, err := e.exec(ctx, "DELETE FROM sessions WHERE hash = ?", hash)
	return oneRow(res, err, "session")
}

// SessionsDeleteExpired deletes the sessions expired at now.
func (e *executor) SessionsDeleteExpired(ctx context.Context, now int64) (int64, error) {
	res, err := e.exec(ctx, "DELETE FROM sessions WHERE expires_at <= ?", now)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: delete expired sessions: %w", err)
	}
	return affected(res)
}

// SessionsDeleteUser ends the user's sessions but keep.
func (e *executor) SessionsDeleteUser(ctx context.Context, userID int64, keep string) (int64, error) {
	res, err := e.exec(ctx, "DELETE FROM sessions WHERE user_id = ? AND hash <> ?", userID, keep)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: end sessions of user %d: %w", userID, err)
	}
	return affected(res)
}

// one finishes a single-row read: one(scan(...))(what) returns the row, or nil and
// ErrNotFound or a wrapped error naming what.
func one[T any](v *T, err error) func(what string) (*T, error) {
	return func(what string) (*T, error) {
		if err := rowErr(err, what); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// rowErr turns a single-row read's error into ErrNotFound or a wrapped error naming what.
func rowErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return fmt.Errorf("sqlstore: get %s: %w", what, err)
}

// oneRow checks that a write by key hit its row.
func oneRow(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("sqlstore: write %s: %w", what, err)
	}
	n, err := affected(res)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
