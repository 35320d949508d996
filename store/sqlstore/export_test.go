package sqlstore

import "context"

// MigrateTo applies the migrations up to version, for tests of a migration on existing data.
func (s *Store) MigrateTo(ctx context.Context, version int64) error { return s.migrateTo(ctx, version) }

// WithoutReturning makes a MariaDB store use the statements written for MySQL 8, which has no
// INSERT ... RETURNING, so that those paths are tested on MariaDB too.
func WithoutReturning() Option { return func(c *config) { c.noReturning = true } }
