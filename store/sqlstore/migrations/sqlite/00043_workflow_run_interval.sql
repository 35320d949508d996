-- +goose Up
-- A workflow run a schedule made (its trigger job's fire, or a backfill of it) keeps that
-- fire's data interval and backfill, and gives them to each of its nodes' executions: a
-- backfilled workflow's nodes see the interval they are to process, as a backfilled job does.
ALTER TABLE workflow_runs ADD COLUMN interval_start bigint NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN interval_end bigint NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN backfill_id bigint NOT NULL DEFAULT 0;
-- A backfill's runs at once (its max_concurrent) count its workflow runs still running.
CREATE INDEX workflow_runs_backfill_idx ON workflow_runs (backfill_id, state);

-- +goose Down
DROP INDEX workflow_runs_backfill_idx;
ALTER TABLE workflow_runs DROP COLUMN backfill_id;
ALTER TABLE workflow_runs DROP COLUMN interval_end;
ALTER TABLE workflow_runs DROP COLUMN interval_start;
