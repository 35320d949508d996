-- +goose Up
-- A list of one cause (manual, retry, recovery, ...) searches that cause's executions instead
-- of filtering the whole history. MySQL and MariaDB have no partial index, so schedule's
-- executions are in it too; an InnoDB secondary index ends with the primary key, so this is
-- (cause, id), as a fired-time range walks executions_fired_idx as (fired_at, id).
CREATE INDEX executions_cause_idx ON executions (cause);

-- +goose Down
DROP INDEX executions_cause_idx ON executions;
