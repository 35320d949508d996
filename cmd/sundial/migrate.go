package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/internal/dsn"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// newMigrateCmd is `sundial migrate up|status`, for operators who migrate the database before
// they roll out nodes of a new version (which then start with --no-migrate).
func newMigrateCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply or list the database's schema migrations",
		Long: `Apply (up) or list (status) the schema migrations this binary knows. sundial server applies
them itself on start unless it runs with --no-migrate; run 'sundial migrate up' first when
nodes of a new version are rolled out one by one with --no-migrate.

--db can also be set as SUNDIAL_DB.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "sundial.db", "database: a SQLite path, postgres://… or mysql://user@tcp(host:3306)/db")
	up := &cobra.Command{Use: "up", Short: "Apply the migrations the database lacks", Args: cobra.NoArgs,
		RunE: withStore(&db, false, func(ctx context.Context, cmd *cobra.Command, st *sqlstore.Store) error {
			before, err := pendingMigrations(ctx, st)
			if err != nil {
				return err
			}
			if err := st.Migrate(ctx); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Applied %d migrations; the database %s is up to date\n", before, dsn.Redact(db))
			return nil
		})}
	status := &cobra.Command{Use: "status", Short: "List the migrations and whether the database has each", Args: cobra.NoArgs,
		RunE: withStore(&db, false, func(ctx context.Context, cmd *cobra.Command, st *sqlstore.Store) error {
			ms, err := st.MigrationStatus(ctx)
			if err != nil {
				return err
			}
			return printMigrations(cmd.OutOrStdout(), ms)
		})}
	cmd.AddCommand(up, status)
	return cmd
}

func printMigrations(w io.Writer, ms []sqlstore.Migration) error {
	t := newTable(w, "VERSION MIGRATION STATE APPLIED")
	for _, m := range ms {
		state, at := "pending", ""
		if m.Applied {
			state, at = "applied", m.AppliedAt.Local().Format("2006-01-02 15:04:05")
		}
		t.row(itoa(m.Version), m.Name, state, at)
	}
	return t.flush()
}

// pendingMigrations counts the migrations the database lacks.
// storeFunc is what a command does with the database of its --db.
type storeFunc func(ctx context.Context, cmd *cobra.Command, st *sqlstore.Store) error

// withStore runs fn on the database of *db (read when the command runs, after the
// environment's SUNDIAL_DB), closed afterwards; migrated refuses a database that lacks
// migrations, for commands that read or write its tables.
func withStore(db *string, migrated bool, fn storeFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := flagsFromEnv(cmd.Flags(), nil); err != nil {
			return err
		}
		ctx := commandContext(cmd)
		st, err := openStore(ctx, *db, migrated)
		if err != nil {
			return err
		}
		defer st.Close()
		return fn(ctx, cmd, st)
	}
}

// openStore opens the database db; migrated refuses one that lacks migrations.
func openStore(ctx context.Context, db string, migrated bool) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	if !migrated {
		return st, nil
	}
	if n, err := pendingMigrations(ctx, st); err != nil {
		st.Close()
		return nil, err
	} else if n > 0 {
		st.Close()
		return nil, fmt.Errorf("the database %s lacks %d migrations: start the server on it once, or run 'sundial migrate up --db …'", dsn.Redact(db), n)
	}
	return st, nil
}

func pendingMigrations(ctx context.Context, st *sqlstore.Store) (int, error) {
	ms, err := st.MigrationStatus(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		if !m.Applied {
			n++
		}
	}
	return n, nil
}

func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
