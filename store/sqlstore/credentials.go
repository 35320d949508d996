package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// Executor credentials per app (migration 00012).

const credentialCols = "app, hash, created_at, rotated_at"

// AppCredentialCreate inserts the app's first credential.
func (e *executor) AppCredentialCreate(ctx context.Context, c *store.AppCredential) error {
	_, err := e.exec(ctx, "INSERT INTO app_credentials ("+credentialCols+") VALUES (?, ?, ?, 0)", c.App, c.Hash, c.CreatedAt)
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("sqlstore: credential of app %q: %w", c.App, store.ErrAlreadyExists)
	case err != nil:
		return fmt.Errorf("sqlstore: create the credential of app %q: %w", c.App, err)
	}
	c.RotatedAt = 0
	return nil
}

// AppCredentialRotate replaces the app's credential.
func (e *executor) AppCredentialRotate(ctx context.Context, c *store.AppCredential) error {
	res, err := e.exec(ctx, "UPDATE app_credentials SET hash = ?, rotated_at = ? WHERE app = ?", c.Hash, c.RotatedAt, c.App)
	if err != nil {
		return fmt.Errorf("sqlstore: rotate the credential of app %q: %w", c.App, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("sqlstore: credential of app %q: %w", c.App, store.ErrNotFound)
	}
	got, err := e.credentialWhere(ctx, "app = ?", c.App)
	if err != nil {
		return err
	}
	*c = *got
	return nil
}

// AppCredentialByHash reads the credential by its unique hash index.
func (e *executor) AppCredentialByHash(ctx context.Context, hash string) (*store.AppCredential, error) {
	return e.credentialWhere(ctx, "hash = ?", hash)
}

func (e *executor) credentialWhere(ctx context.Context, where string, arg any) (*store.AppCredential, error) {
	var c store.AppCredential
	err := e.queryRow(ctx, "SELECT "+credentialCols+" FROM app_credentials WHERE "+where, arg).
		Scan(&c.App, &c.Hash, &c.CreatedAt, &c.RotatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: app credential: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read an app credential: %w", err)
	}
	return &c, nil
}

// AppCredentialList lists every credential by app.
func (e *executor) AppCredentialList(ctx context.Context) ([]*store.AppCredential, error) {
	rows, err := e.query(ctx, "SELECT "+credentialCols+" FROM app_credentials ORDER BY app")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list app credentials: %w", err)
	}
	defer rows.Close()
	var out []*store.AppCredential
	for rows.Next() {
		var c store.AppCredential
		if err := rows.Scan(&c.App, &c.Hash, &c.CreatedAt, &c.RotatedAt); err != nil {
			return nil, fmt.Errorf("sqlstore: list app credentials: %w", err)
		}
		out = append(out, &c)
	}
	return out, rows.Err()
}
