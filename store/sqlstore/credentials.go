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

// AppCredentialDelete deletes the app's credential.
func (e *executor) AppCredentialDelete(ctx context.Context, app string) error {
	res, err := e.exec(ctx, "DELETE FROM app_credentials WHERE app = ?", app)
	if err != nil {
		return fmt.Errorf("sqlstore: revoke the credential of app %q: %w", app, err)
	}
	if n, err := affected(res); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("sqlstore: credential of app %q: %w", app, store.ErrNotFound)
	}
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

// The cluster's signing keys (migration 00016).

// ClusterKeyCreate inserts one generation; the primary key makes two nodes creating the same
// generation at once store one of them.
func (e *executor) ClusterKeyCreate(ctx context.Context, k *store.ClusterKey) error {
	_, err := e.exec(ctx, "INSERT INTO cluster_keys (generation, public_key, private_key, created_at) VALUES (?, ?, ?, ?)",
		k.Generation, k.PublicKey, k.PrivateKey, k.CreatedAt)
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("sqlstore: cluster key generation %d: %w", k.Generation, store.ErrAlreadyExists)
	case err != nil:
		return fmt.Errorf("sqlstore: create cluster key generation %d: %w", k.Generation, err)
	}
	return nil
}

// ClusterKeys lists every generation, newest first.
func (e *executor) ClusterKeys(ctx context.Context) ([]*store.ClusterKey, error) {
	rows, err := e.query(ctx, "SELECT generation, public_key, private_key, created_at FROM cluster_keys ORDER BY generation DESC")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list cluster keys: %w", err)
	}
	defer rows.Close()
	var out []*store.ClusterKey
	for rows.Next() {
		var k store.ClusterKey
		if err := rows.Scan(&k.Generation, &k.PublicKey, &k.PrivateKey, &k.CreatedAt); err != nil {
			return nil, fmt.Errorf("sqlstore: list cluster keys: %w", err)
		}
		out = append(out, &k)
	}
	return out, rows.Err()
}
