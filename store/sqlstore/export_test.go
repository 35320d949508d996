package sqlstore

// WithoutReturning makes a MariaDB store use the statements written for MySQL 8, which has no
// INSERT ... RETURNING, so that those paths are tested on MariaDB too.
func WithoutReturning() Option { return func(c *config) { c.noReturning = true } }
