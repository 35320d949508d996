// Package xxljob reads an XXL-JOB admin database into an importer.Plan, for
// `sundial import xxl-job`: its executor groups become apps, its jobs become jobs with one
// trigger each, its GLUE sources (with their saved history) become script jobs with their
// versions. The schema is XXL-JOB's doc/db/tables_xxl_job.sql in either shape: 2.x to 3.4
// (xxl_job_info.job_desc, xxl_job_group.title) or 3.5 (name, name, and a per-group
// access_token); which one the database has is read from its columns.
package xxljob

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	dsnpkg "github.com/sundial-scheduler/sundial/internal/dsn"
	xxlproto "github.com/sundial-scheduler/sundial/xxljob"
)

// Open opens the XXL-JOB database at dsn: mysql:// and then either the go-sql-driver DSN
// (user:pass@tcp(host:3306)/xxl_job) or a URL's rest (user:pass@host:3306/xxl_job).
func Open(dsn string) (*sql.DB, error) {
	// XXL-JOB keeps its jobs in MySQL.
	d, err := dsnpkg.Parse(dsn, dsnpkg.MySQL)
	if err == nil {
		var conn driver.Connector
		if conn, err = mysql.NewConnector(d.MySQL); err == nil {
			return sql.OpenDB(conn), nil
		}
	}
	return nil, fmt.Errorf("xxljob: --from %s: %w", dsnpkg.Redact(dsn), err)
}

// schema is what the database's columns say about its XXL-JOB version.
type schema struct {
	// jobName is xxl_job_info's description column: job_desc (≤3.4) or name (3.5).
	jobName string
	// groupTitle is xxl_job_group's display name column: title (≤3.4) or name (3.5).
	groupTitle string
	// token: xxl_job_group has access_token (3.5).
	token bool
	// scheduleType: xxl_job_info has schedule_type and schedule_conf (2.2+); before, job_cron.
	scheduleType bool
	// misfire: xxl_job_info has misfire_strategy (2.2+).
	misfire bool
	// since34: columns 3.4.0 widened (executor_param TEXT, xxl_job_registry.id BIGINT).
	since34 bool
}

// readSchema reads the XXL-JOB tables' columns from information_schema.
func readSchema(ctx context.Context, db *sql.DB) (schema, error) {
	rows, err := db.QueryContext(ctx, `SELECT LOWER(table_name), LOWER(column_name), LOWER(data_type) FROM information_schema.columns
		WHERE table_schema = DATABASE() AND LOWER(table_name) IN ('xxl_job_info', 'xxl_job_group', 'xxl_job_registry', 'xxl_job_logglue')`)
	if err != nil {
		return schema{}, fmt.Errorf("xxljob: read the schema: %w", err)
	}
	defer rows.Close()
	cols := map[string]string{}
	for rows.Next() {
		var table, col, typ string
		if err := rows.Scan(&table, &col, &typ); err != nil {
			return schema{}, fmt.Errorf("xxljob: read the schema: %w", err)
		}
		cols[table+"."+col] = typ
	}
	if err := rows.Err(); err != nil {
		return schema{}, fmt.Errorf("xxljob: read the schema: %w", err)
	}
	has := func(c string) bool { _, ok := cols[c]; return ok }
	if !has("xxl_job_info.id") || !has("xxl_job_group.app_name") {
		return schema{}, errors.New("xxljob: the database has no XXL-JOB tables (xxl_job_info, xxl_job_group): is --from the XXL-JOB admin's database?")
	}
	s := schema{jobName: "job_desc", groupTitle: "title", token: has("xxl_job_group.access_token"),
		scheduleType: has("xxl_job_info.schedule_type"), misfire: has("xxl_job_info.misfire_strategy"),
		since34: cols["xxl_job_info.executor_param"] == "text" || cols["xxl_job_registry.id"] == "bigint"}
	if !has("xxl_job_info.job_desc") {
		s.jobName = "name"
	}
	if !has("xxl_job_group.title") {
		s.groupTitle = "name"
	}
	if !s.scheduleType && !has("xxl_job_info.job_cron") {
		return schema{}, errors.New("xxljob: xxl_job_info has neither schedule_type nor job_cron: an XXL-JOB version this import does not know")
	}
	return s, nil
}

// generation is the protocol generation the schema points at, and whether it is a guess.
func (s schema) generation() (gen string, sure bool) {
	switch {
	case s.token:
		return string(xxlproto.Gen35), true
	case s.since34:
		return string(xxlproto.Gen33), true
	}
	return string(xxlproto.Gen2), false
}

// shape names the schema for the plan's source line.
func (s schema) shape() string {
	if s.jobName == "name" {
		return "3.5 schema"
	}
	if s.since34 {
		return "3.4 schema"
	}
	return "2.x schema"
}

type group struct {
	id          int64
	appName     string
	title       string
	addressType int
	addresses   string
	token       string
}

type job struct {
	id                                      int64
	group                                   int64
	desc, author, alarmEmail                string
	scheduleType, scheduleConf, misfire     string
	route, handler, param, block            string
	timeout, retries                        int
	glueType, glueSource, glueRemark, child string
	status                                  int
	nextTime                                int64
}

type glue struct {
	source, remark string
}

func readGroups(ctx context.Context, db *sql.DB, s schema) ([]group, error) {
	token := "''"
	if s.token {
		token = "COALESCE(access_token, '')"
	}
	rows, err := db.QueryContext(ctx, "SELECT id, app_name, COALESCE("+s.groupTitle+", ''), address_type, COALESCE(address_list, ''), "+token+
		" FROM xxl_job_group ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("xxljob: read xxl_job_group: %w", err)
	}
	defer rows.Close()
	var out []group
	for rows.Next() {
		var g group
		if err := rows.Scan(&g.id, &g.appName, &g.title, &g.addressType, &g.addresses, &g.token); err != nil {
			return nil, fmt.Errorf("xxljob: read xxl_job_group: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

func readJobs(ctx context.Context, db *sql.DB, s schema) ([]job, error) {
	sched := "'CRON', COALESCE(job_cron, '')"
	if s.scheduleType {
		sched = "COALESCE(schedule_type, 'NONE'), COALESCE(schedule_conf, '')"
	}
	misfire := "'DO_NOTHING'"
	if s.misfire {
		misfire = "COALESCE(misfire_strategy, 'DO_NOTHING')"
	}
	rows, err := db.QueryContext(ctx, "SELECT id, job_group, COALESCE("+s.jobName+", ''), COALESCE(author, ''), COALESCE(alarm_email, ''), "+
		sched+", "+misfire+`, COALESCE(executor_route_strategy, ''), COALESCE(executor_handler, ''),
		COALESCE(executor_param, ''), COALESCE(executor_block_strategy, ''), executor_timeout, executor_fail_retry_count,
		COALESCE(glue_type, 'BEAN'), COALESCE(glue_source, ''), COALESCE(glue_remark, ''), COALESCE(child_jobid, ''),
		trigger_status, trigger_next_time FROM xxl_job_info ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("xxljob: read xxl_job_info: %w", err)
	}
	defer rows.Close()
	var out []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.id, &j.group, &j.desc, &j.author, &j.alarmEmail, &j.scheduleType, &j.scheduleConf, &j.misfire,
			&j.route, &j.handler, &j.param, &j.block, &j.timeout, &j.retries, &j.glueType, &j.glueSource, &j.glueRemark,
			&j.child, &j.status, &j.nextTime); err != nil {
			return nil, fmt.Errorf("xxljob: read xxl_job_info: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// readGlues returns each job's saved GLUE sources, oldest first.
func readGlues(ctx context.Context, db *sql.DB) (map[int64][]glue, error) {
	rows, err := db.QueryContext(ctx, `SELECT job_id, COALESCE(glue_source, ''), COALESCE(glue_remark, '')
		FROM xxl_job_logglue ORDER BY job_id, update_time, id`)
	if err != nil {
		return nil, fmt.Errorf("xxljob: read xxl_job_logglue: %w", err)
	}
	defer rows.Close()
	out := map[int64][]glue{}
	for rows.Next() {
		var id int64
		var g glue
		if err := rows.Scan(&id, &g.source, &g.remark); err != nil {
			return nil, fmt.Errorf("xxljob: read xxl_job_logglue: %w", err)
		}
		out[id] = append(out[id], g)
	}
	return out, rows.Err()
}
