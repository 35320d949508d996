-- +goose Up
-- PostgreSQL partitions the history by day here (see its 00039). SQLite has no partitions:
-- retention keeps deleting old history in batches through executions_fired_idx.
SELECT 1;

-- +goose Down
SELECT 1;
