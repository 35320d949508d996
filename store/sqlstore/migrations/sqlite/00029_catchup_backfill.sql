-- +goose Up
-- A trigger's catch-up policy: catchup_window_ms is how late its fire may be before its misfire
-- policy applies (0: the cluster's misfire threshold, as before); catchup 'coalesce' makes the
-- fires missed past that window one run covering the whole gap ('' : the misfire policy alone).
ALTER TABLE triggers ADD COLUMN catchup_window_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE triggers ADD COLUMN catchup varchar(16) NOT NULL DEFAULT '';
-- Every run's data interval (Unix ms; 0 for runs no schedule made, such as run-now), and the
-- backfill that made it (0: none). Live rows and the history both carry them.
ALTER TABLE executions_live ADD COLUMN interval_start bigint NOT NULL DEFAULT 0;
ALTER TABLE executions_live ADD COLUMN interval_end bigint NOT NULL DEFAULT 0;
ALTER TABLE executions_live ADD COLUMN backfill_id bigint NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN interval_start bigint NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN interval_end bigint NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN backfill_id bigint NOT NULL DEFAULT 0;
-- A backfill: runs of a job for every scheduled time of its trigger in [from_at, to_at]. The
-- engine makes its runs in the transaction that moves cursor_at (the last scheduled time
-- given a run), under this row's lock, so a node that dies between two steps neither skips
-- nor repeats a time.
CREATE TABLE backfills (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id         bigint NOT NULL,
    trigger_id     bigint NOT NULL,
    from_at        bigint NOT NULL,
    to_at          bigint NOT NULL,
    max_concurrent integer NOT NULL DEFAULT 1,
    chunk          integer NOT NULL DEFAULT 1,
    state          varchar(16) NOT NULL,
    cursor_at      bigint NOT NULL DEFAULT 0,
    total          bigint NOT NULL DEFAULT 0,
    created        bigint NOT NULL DEFAULT 0,
    created_by     varchar(200) NOT NULL DEFAULT '',
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);
CREATE INDEX backfills_state_idx ON backfills (state);
CREATE INDEX executions_live_backfill_idx ON executions_live (backfill_id);

-- +goose Down
DROP INDEX executions_live_backfill_idx;
DROP TABLE backfills;
ALTER TABLE executions DROP COLUMN backfill_id;
ALTER TABLE executions DROP COLUMN interval_end;
ALTER TABLE executions DROP COLUMN interval_start;
ALTER TABLE executions_live DROP COLUMN backfill_id;
ALTER TABLE executions_live DROP COLUMN interval_end;
ALTER TABLE executions_live DROP COLUMN interval_start;
ALTER TABLE triggers DROP COLUMN catchup;
ALTER TABLE triggers DROP COLUMN catchup_window_ms;
