-- +goose Up
-- A run records the version of its workflow it started with (its graph is the snapshot), so
-- an edit shows which runs keep the old definition; and its deadline (created_at plus the
-- graph's timeout_ms, 0 for none), which the leader's timeout sweep finds by the index.
ALTER TABLE workflow_runs ADD COLUMN workflow_version bigint NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN deadline_at bigint NOT NULL DEFAULT 0;
CREATE INDEX workflow_runs_deadline_idx ON workflow_runs (state, deadline_at);

-- +goose Down
DROP INDEX workflow_runs_deadline_idx;
ALTER TABLE workflow_runs DROP COLUMN deadline_at;
ALTER TABLE workflow_runs DROP COLUMN workflow_version;
