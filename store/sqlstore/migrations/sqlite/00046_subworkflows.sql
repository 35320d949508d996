-- +goose Up
-- A sub-workflow node links the run it started (its newest, once retried): the run links
-- back through workflow_runs.parent_node. Both are written in the transaction that moves the
-- node to running, so a node starts one child run per attempt.
ALTER TABLE workflow_nodes ADD COLUMN child_run bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE workflow_nodes DROP COLUMN child_run;
