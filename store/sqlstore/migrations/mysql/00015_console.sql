-- +goose Up
-- The version of a script job's script that an execution ran, and the parameters a run-now
-- gave in place of the job's own ('': the job's). jobs.script_version is the job's current
-- version, kept in the transaction that saves the script, so that marking a fire running
-- stamps it with one primary-key read (ExecutionsMarkRunning). 0 is "not a script job".
ALTER TABLE jobs ADD COLUMN script_version bigint NOT NULL DEFAULT 0;
UPDATE jobs SET script_version = COALESCE((SELECT MAX(s.version) FROM script_versions s WHERE s.job_id = jobs.id), 0);
-- The live table and the history keep the same columns in the same order (00005).
ALTER TABLE executions ADD COLUMN script_version bigint NOT NULL DEFAULT 0, ADD COLUMN params mediumtext NOT NULL;
ALTER TABLE executions_live ADD COLUMN script_version bigint NOT NULL DEFAULT 0, ADD COLUMN params mediumtext NOT NULL;

-- The dashboard's report of every job read a row per job and day and summed them: with
-- 10,000 jobs, 300,000 rows for 30 days, 300 ms and more. Each day now has a total row
-- (job_id 0, which no job has) that ReportsRefresh keeps, and a job's days are read through
-- (job_id, day) instead of a scan of every job's rows of the range.
CREATE INDEX daily_reports_job_day_idx ON daily_reports (job_id, day);
INSERT INTO daily_reports (day, job_id, running_count, succeeded_count, failed_count, other_count, updated_at)
    SELECT day, 0, SUM(running_count), SUM(succeeded_count), SUM(failed_count), SUM(other_count), MAX(updated_at)
    FROM daily_reports WHERE job_id <> 0 GROUP BY day;

-- +goose Down
DELETE FROM daily_reports WHERE job_id = 0;
DROP INDEX daily_reports_job_day_idx ON daily_reports;
ALTER TABLE executions_live DROP COLUMN script_version, DROP COLUMN params;
ALTER TABLE executions DROP COLUMN script_version, DROP COLUMN params;
ALTER TABLE jobs DROP COLUMN script_version;
