-- +goose Up
-- How long a fire of a remote job that finds no executor of its app online waits for one
-- before it fails; 0 for the node's --executor-wait.
ALTER TABLE jobs ADD COLUMN dispatch_timeout_ms bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN dispatch_timeout_ms;
