-- +goose Up
-- A workflow's overlap policy, as a job's (concurrency, max_concurrent): what a run that
-- starts while an earlier one runs does. Decided under the workflow's row lock.
ALTER TABLE workflows ADD COLUMN concurrency text NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN max_concurrent integer NOT NULL DEFAULT 0;
-- The retention delete of ended workflow runs finds them by finished_at.
CREATE INDEX workflow_runs_finished_idx ON workflow_runs (finished_at);

-- +goose Down
DROP INDEX workflow_runs_finished_idx;
ALTER TABLE workflows DROP COLUMN max_concurrent;
ALTER TABLE workflows DROP COLUMN concurrency;
