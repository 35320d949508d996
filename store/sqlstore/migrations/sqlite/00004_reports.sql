-- +goose Up
-- Daily report rows for the dashboard (XXL-JOB's xxl_job_log_report, per job as well as per
-- day): the leader recomputes today's and yesterday's rows from executions every minute, so
-- the dashboard reads a few rows per day instead of counting executions.

CREATE TABLE daily_reports (
    -- The UTC day, YYYY-MM-DD: sorts as it reads, and means the same in every dialect.
    day             varchar(10) NOT NULL,
    job_id          bigint NOT NULL,
    -- pending, acquired or running
    running_count   bigint NOT NULL DEFAULT 0,
    succeeded_count bigint NOT NULL DEFAULT 0,
    -- failed, timed_out or lost
    failed_count    bigint NOT NULL DEFAULT 0,
    -- skipped or canceled
    other_count     bigint NOT NULL DEFAULT 0,
    updated_at      bigint NOT NULL,
    -- ReportsDaily: a range of days; ReportsRefresh: one day's rows.
    PRIMARY KEY (day, job_id)
);

-- +goose Down
DROP TABLE daily_reports;
