-- +goose Up
-- Every fire inserts a live execution and advances its trigger, and an update that changes
-- an indexed column (next_fire_at) adds an entry to each index of the row. Two indexes name a
-- column that is 0 on almost every row: a backfill's runs and a trigger's further zones. Only
-- their non-zero rows are ever looked up (the queries say "<> 0" so a prepared plan can use
-- the index), so each index now holds only those, and a fire writes two index entries fewer.
DROP INDEX executions_live_backfill_idx;
CREATE INDEX executions_live_backfill_idx ON executions_live (backfill_id) WHERE backfill_id <> 0;
DROP INDEX triggers_zone_of_idx;
CREATE INDEX triggers_zone_of_idx ON triggers (zone_of) WHERE zone_of <> 0;

-- +goose Down
DROP INDEX triggers_zone_of_idx;
CREATE INDEX triggers_zone_of_idx ON triggers (zone_of);
DROP INDEX executions_live_backfill_idx;
CREATE INDEX executions_live_backfill_idx ON executions_live (backfill_id);
