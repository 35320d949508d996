-- +goose Up
-- PostgreSQL and SQLite make executions_live_backfill_idx and triggers_zone_of_idx partial
-- here (only non-zero rows), so a fire writes two index entries fewer. MariaDB/MySQL have no
-- partial indexes; theirs stay whole.
SELECT 1;

-- +goose Down
SELECT 1;
