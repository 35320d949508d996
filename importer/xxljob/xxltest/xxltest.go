// Package xxltest makes XXL-JOB admin databases for tests: a database of the test's own on
// the MariaDB/MySQL server of SUNDIAL_TEST_MYSQL, with XXL-JOB's tables in the 2.4 or the 3.5
// shape (schema-*.sql, from ../../shared/specs/xxl-job.md §1) and a representative set of
// executor groups and jobs (Fill): every routing, block and misfire strategy, every schedule
// type, GLUE with history, a stopped job, child jobs, and things that cannot be imported.
package xxltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

//go:embed schema-2.4.sql
var schema24 string

//go:embed schema-3.5.sql
var schema35 string

// Versions are the schema shapes Create makes.
var Versions = []string{"2.4", "3.5"}

// Create makes a database xxl_import_<random> with XXL-JOB version's tables (2.4 or 3.5),
// dropped when t ends, and returns its mysql:// DSN and an open handle. Without
// SUNDIAL_TEST_MYSQL the test is skipped (failed under CI=true).
func Create(t testing.TB, version string) (string, *sql.DB) {
	t.Helper()
	base := os.Getenv("SUNDIAL_TEST_MYSQL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("xxltest: SUNDIAL_TEST_MYSQL is not set, and CI=true makes the XXL-JOB import tests mandatory")
		}
		t.Skip("xxltest: set SUNDIAL_TEST_MYSQL (e.g. mysql://root@tcp(127.0.0.1:3306)/test) to run the XXL-JOB import tests")
	}
	ddl := map[string]string{"2.4": schema24, "3.5": schema35}[version]
	if ddl == "" {
		t.Fatalf("xxltest: no schema %q", version)
	}
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(base, "mysql://"))
	if err != nil {
		t.Fatalf("xxltest: SUNDIAL_TEST_MYSQL: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "xxl_import_" + hex.EncodeToString(b)
	ctx := context.Background()
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatalf("xxltest: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Logf("xxltest: drop %s: %v", name, err)
		}
	})
	cfg.DBName = name
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatalf("xxltest: create the %s schema: %v", version, err)
	}
	cfg.MultiStatements = false
	return "mysql://" + cfg.FormatDSN(), db
}

// The fixture's facts the tests check.
const (
	// FixRateJob is the running FIX_RATE job; its trigger_next_time is Fill's now + FixRateAhead.
	FixRateJob   = 3
	FixRateAhead = 10 * time.Minute
)

// Fill inserts the representative groups and jobs into a database Create made. now is the
// time the running FIX_RATE job is due after (FixRateAhead later).
func Fill(t testing.TB, db *sql.DB, version string, now time.Time) {
	t.Helper()
	jobName, groupTitle := "job_desc", "title"
	if version == "3.5" {
		jobName, groupTitle = "name", "name"
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("xxltest: %s: %v", q, err)
		}
	}
	exec("INSERT INTO xxl_job_group (id, app_name, " + groupTitle + ", address_type, address_list, update_time) VALUES " +
		"(1, 'order-exec', 'Orders', 0, 'http://10.0.0.9:9999/', NOW()), " +
		"(2, 'report-exec', 'Reports', 1, 'http://10.0.0.5:9999/,http://10.0.0.6:9999/', NOW())")
	if version == "3.5" {
		exec("UPDATE xxl_job_group SET access_token = 'default_token' WHERE id = 1")
		exec("UPDATE xxl_job_group SET access_token = 'r3port-t0ken' WHERE id = 2")
	}
	next := now.Add(FixRateAhead).UnixMilli()
	type j struct {
		id, group                               int
		desc, author, alarm, stype, conf, mis   string
		route, handler, param, block            string
		timeout, retries                        int
		glueType, glueSource, glueRemark, child string
		status                                  int
		nextTime                                int64
	}
	jobs := []j{
		{1, 1, "Nightly orders", "alice", "ops@example.com,dev@example.com", "CRON", "0 0 2 * * ?", "DO_NOTHING",
			"FIRST", "orderJob", "p=1", "SERIAL_EXECUTION", 30, 2, "BEAN", "", "", "2,3", 1, 0},
		{2, 1, "Five-minutely sync", "bob", "", "CRON", "0 */5 * * * ?", "FIRE_ONCE_NOW",
			"LAST", "syncJob", "", "DISCARD_LATER", 0, 0, "BEAN", "", "", "", 1, 0},
		{FixRateJob, 1, "Poll every 30 s", "", "", "FIX_RATE", "30", "DO_NOTHING",
			"ROUND", "pollJob", "", "COVER_EARLY", 0, 0, "BEAN", "", "", "", 1, next},
		{4, 1, "Hourly, stopped", "", "", "FIX_RATE", "3600", "FIRE_ONCE_NOW",
			"RANDOM", "hourlyJob", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 0, 0},
		{5, 1, "Cleanup script", "carol", "", "CRON", "0 30 3 * * ?", "DO_NOTHING",
			"CONSISTENT_HASH", "", "", "SERIAL_EXECUTION", 0, 1, "GLUE_SHELL", "echo v3", "third", "", 0, 0},
		{6, 2, "Python report", "", "", "CRON", "0 0 6 ? * MON-FRI", "DO_NOTHING",
			"LEAST_FREQUENTLY_USED", "", "--fast", "SERIAL_EXECUTION", 0, 0, "GLUE_PYTHON", "print('hi')", "", "", 1, 0},
		{7, 2, "Run by hand", "", "", "NONE", "", "DO_NOTHING",
			"LEAST_RECENTLY_USED", "manualJob", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 0, 0},
		{8, 2, "Last Friday", "", "", "CRON", "0 15 10 ? * 6L", "DO_NOTHING",
			"FAILOVER", "monthEnd", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 1, 0},
		{9, 2, "Every fifth day", "", "", "CRON", "0 0 12 1/5 * ?", "DO_NOTHING",
			"BUSYOVER", "fifthDay", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 1, 0},
		{10, 1, "Sharded scan", "", "", "CRON", "0 0/30 * * * ?", "DO_NOTHING",
			"SHARDING_BROADCAST", "scanJob", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 1, 0},
		{11, 1, "Fixed delay", "", "", "FIX_DELAY", "60", "DO_NOTHING",
			"FIRST", "delayJob", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 1, 0},
		{12, 1, "Broken", "", "not-an-email,ops@example.com", "CRON", "0 0 25 * * ?", "DO_NOTHING",
			"FIRST", "brokenJob", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "99,abc,12", 0, 0},
		{13, 1, "No handler", "", "", "CRON", "0 0 1 * * ?", "DO_NOTHING",
			"FIRST", "", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 0, 0},
		{14, 7, "Lost group", "", "", "CRON", "0 0 1 * * ?", "DO_NOTHING",
			"FIRST", "x", "", "SERIAL_EXECUTION", 0, 0, "BEAN", "", "", "", 0, 0},
	}
	for _, x := range jobs {
		exec("INSERT INTO xxl_job_info (id, job_group, "+jobName+`, add_time, update_time, author, alarm_email, schedule_type,
			schedule_conf, misfire_strategy, executor_route_strategy, executor_handler, executor_param, executor_block_strategy,
			executor_timeout, executor_fail_retry_count, glue_type, glue_source, glue_remark, glue_updatetime, child_jobid,
			trigger_status, trigger_last_time, trigger_next_time) VALUES (?, ?, ?, NOW(), NOW(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NOW(), ?, ?, 0, ?)`,
			x.id, x.group, x.desc, x.author, x.alarm, x.stype, x.conf, x.mis, x.route, x.handler, x.param, x.block,
			x.timeout, x.retries, x.glueType, x.glueSource, x.glueRemark, x.child, x.status, x.nextTime)
	}
	// Job 5's saved versions, the newest being its current source.
	for i, g := range []struct{ src, remark string }{{"echo v1", "first"}, {"echo v2", "second"}, {"echo v3", "third"}} {
		at := now.Add(time.Duration(i-3) * time.Hour).UTC().Format("2006-01-02 15:04:05")
		exec("INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) VALUES (5, 'GLUE_SHELL', ?, ?, ?, ?)",
			g.src, g.remark, at, at)
	}
	exec(fmt.Sprintf("INSERT INTO xxl_job_registry (registry_group, registry_key, registry_value, update_time) VALUES ('EXECUTOR', 'order-exec', '%s', NOW())",
		"http://10.0.0.9:9999/"))
}
