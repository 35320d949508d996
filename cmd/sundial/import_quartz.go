package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/importer/quartz"
	"github.com/sundial-scheduler/sundial/internal/dsn"
)

// newImportQuartzCmd is `sundial import quartz --from postgres://…|mysql://…`.
func newImportQuartzCmd() *cobra.Command {
	var from, prefix, schedName, zone string
	cmd := importCommand("quartz --from postgres://…|mysql://… [--table-prefix QRTZ_] [--sched-name NAME] [--zone ZONE] [--apply]",
		"Import a Quartz JDBC job store's jobs, triggers and calendars",
		`Read a Quartz 2.x JDBC job store (its QRTZ_ tables on PostgreSQL or MySQL/MariaDB) and create
its jobs (job class → handler name, string job data, @DisallowConcurrentExecution → serial,
@PersistJobDataAfterExecution, requests recovery), its cron, simple, calendar-interval and
daily-interval triggers with their stored state (next and previous fire time, times fired,
paused triggers and groups, priority, misfire instruction), and its calendars (Quartz's
Java-serialized holiday, weekly, monthly, annual, daily and cron calendars and their chains).
Daily-interval triggers, and calendars or triggers stored without a zone, use the Quartz JVM's
default zone: give it with --zone. Custom calendar classes, BLOB triggers and job data that is
not strings are listed with the reason.`,
		func(ctx context.Context) (*importer.Plan, error) {
			if from == "" {
				return nil, usageErrorf("--from is required: the Quartz database, postgres://… or mysql://user:pass@tcp(host:3306)/quartz")
			}
			db, err := quartz.Open(from)
			if err != nil {
				return nil, usageError{err}
			}
			defer db.Close()
			return quartz.Read(ctx, db, quartz.Options{Prefix: prefix, SchedName: schedName, Zone: zone, Source: dsn.Redact(from)})
		})
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the Quartz database: postgres://user:pass@host/quartz or mysql://user:pass@tcp(host:3306)/quartz")
	f.StringVar(&prefix, "table-prefix", "QRTZ_", "the Quartz tables' prefix (org.quartz.jobStore.tablePrefix)")
	f.StringVar(&schedName, "sched-name", "", "the scheduler to import (org.quartz.scheduler.instanceName; default: the only one in the tables)")
	f.StringVar(&zone, "zone", "", "the Quartz JVM's default time zone, for daily-interval triggers and zone-less calendars, e.g. Europe/Paris")
	return cmd
}
