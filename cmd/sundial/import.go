package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/importer"
)

// newImportCmd is `sundial import <source>`: one subcommand per scheduler Sundial imports
// from, each made by importCommand.
func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import jobs from another scheduler's database (a dry run unless --apply)",
		Long: `Read another scheduler's database and create its apps, calendars, jobs and triggers in
Sundial's. Without --apply it only prints what it would create, update or leave unchanged,
and everything it cannot map with the reason; with --apply it creates it, in one transaction.
Running it again changes nothing that is already as the source has it.

It writes Sundial's database directly (--db, as the server's; also SUNDIAL_DB), with the
checks of the REST API; a running server picks the new triggers up on its next poll.`,
	}
	cmd.AddCommand(newImportXXLJobCmd(), newImportQuartzCmd())
	return cmd
}

// importCommand makes a `sundial import <source>` subcommand: it adds --db and --apply
// (beside the source's own flags, which the caller adds to the returned command), reads the
// plan with read, runs it against the database and prints it.
func importCommand(use, short, long string, read func(ctx context.Context) (*importer.Plan, error)) *cobra.Command {
	var db string
	var apply bool
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.NoArgs}
	cmd.Flags().StringVar(&db, "db", "sundial.db", "Sundial's database: a SQLite path, postgres://… or mysql://user@tcp(host:3306)/db (also SUNDIAL_DB)")
	cmd.Flags().BoolVar(&apply, "apply", false, "create what the plan says (without it, a dry run: print the plan only)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if v, ok := os.LookupEnv("SUNDIAL_DB"); ok && !cmd.Flags().Changed("db") {
			db = v
		}
		ctx := commandContext(cmd)
		plan, err := read(ctx)
		if err != nil {
			return err
		}
		st, err := openStore(ctx, db, true)
		if err != nil {
			return err
		}
		defer st.Close()
		s, err := sundial.New(sundial.Config{Store: st})
		if err != nil {
			return err
		}
		if err := importer.Run(ctx, s, plan, apply); err != nil {
			return err
		}
		return plan.Print(cmd.OutOrStdout(), apply)
	}
	return cmd
}
