-- +goose Up
--
-- Overlap policies (internal/jobrun.Policy): the old names are stored under their new ones,
-- and at_most keeps its limit.
ALTER TABLE jobs ADD COLUMN max_concurrent integer NOT NULL DEFAULT 0;
UPDATE jobs SET concurrency = 'buffer_all' WHERE concurrency = 'serial';
UPDATE jobs SET concurrency = 'skip' WHERE concurrency = 'discard';
UPDATE jobs SET concurrency = 'terminate' WHERE concurrency = 'replace';
-- A trigger's limited runs: it completes when times_fired reaches run_limit (0: no limit).
ALTER TABLE triggers ADD COLUMN run_limit bigint NOT NULL DEFAULT 0;
-- Who paused a job, why and when (a pause with a note).
ALTER TABLE jobs ADD COLUMN paused_by varchar(190) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN pause_note varchar(500) NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN paused_at bigint NOT NULL DEFAULT 0;
-- Pause on failure: the job pauses itself after pause_after_failures consecutive failures,
-- counted in consecutive_failures by the transactions that write its results.
ALTER TABLE jobs ADD COLUMN pause_after_failures integer NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;

-- +goose Down
UPDATE jobs SET concurrency = 'serial' WHERE concurrency IN ('buffer_all', 'buffer_one', 'at_most');
UPDATE jobs SET concurrency = 'discard' WHERE concurrency = 'skip';
UPDATE jobs SET concurrency = 'replace' WHERE concurrency IN ('terminate', 'cancel');
ALTER TABLE jobs DROP COLUMN max_concurrent;
ALTER TABLE triggers DROP COLUMN run_limit;
ALTER TABLE jobs DROP COLUMN paused_by;
ALTER TABLE jobs DROP COLUMN pause_note;
ALTER TABLE jobs DROP COLUMN paused_at;
ALTER TABLE jobs DROP COLUMN pause_after_failures;
ALTER TABLE jobs DROP COLUMN consecutive_failures;
