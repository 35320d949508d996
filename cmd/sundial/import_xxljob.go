package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/importer/xxljob"
	"github.com/sundial-scheduler/sundial/internal/dsn"
)

// newImportXXLJobCmd is `sundial import xxl-job --from mysql://…`.
func newImportXXLJobCmd() *cobra.Command {
	var from, zone, generation string
	cmd := importCommand("xxl-job --from mysql://user:pass@tcp(host:3306)/xxl_job [--zone ZONE] [--apply]",
		"Import an XXL-JOB admin's executor groups and jobs",
		`Read an XXL-JOB admin database (2.x to 3.5) and create its executor groups as apps (protocol
xxl-job, with their address mode and manual addresses) and its jobs: CRON (Quartz syntax, in
--zone) and FIX_RATE schedules, misfire, routing and block strategies, retries, timeout, child
jobs, alarm e-mails, GLUE sources with their saved versions; a stopped job is imported paused.
Job xxl_job_info N becomes job xxl-N in the group named after its app. Whatever cannot be
mapped is listed with the reason.`,
		func(ctx context.Context) (*importer.Plan, error) {
			if from == "" {
				return nil, usageErrorf("--from is required: the XXL-JOB database, mysql://user:pass@tcp(host:3306)/xxl_job")
			}
			db, err := xxljob.Open(from)
			if err != nil {
				return nil, usageError{err}
			}
			defer db.Close()
			return xxljob.Read(ctx, db, xxljob.Options{Zone: zone, Generation: generation, Source: dsn.Redact(from)})
		})
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the XXL-JOB admin's MySQL database: mysql://user:pass@tcp(host:3306)/xxl_job or mysql://user:pass@host:3306/xxl_job")
	f.StringVar(&zone, "zone", "", "the time zone the XXL-JOB admin ran in (its cron expressions are read in it), e.g. Asia/Shanghai")
	f.StringVar(&generation, "generation", "", "the XXL-JOB version of the executors: 2.x, 3.3 or 3.5 (default: what the schema shows)")
	return cmd
}
