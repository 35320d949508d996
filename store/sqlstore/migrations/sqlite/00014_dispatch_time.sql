-- +goose Up
-- When a run was handed to its executor (the database's clock; 0 before). An executor's
-- heartbeat that does not list the run declares it lost only a grace after this, not after
-- the fire: a dispatch recorded late (the database was unreachable meanwhile) still has its
-- /run in flight, and losing the run then would have its retry run beside it. Only live rows
-- carry it, like executor_instance.
ALTER TABLE executions_live ADD COLUMN dispatched_at bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE executions_live DROP COLUMN dispatched_at;
