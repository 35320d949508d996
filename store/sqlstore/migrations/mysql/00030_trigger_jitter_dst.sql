-- +goose Up
-- Schedule policies of a trigger (docs/policies.md, "Jitter, DST and zones"): jitter_ms, the
-- largest offset (ms) the engine adds to a fire's start, derived from the trigger and the
-- scheduled time (0: none); dst_policy, how local times a DST change repeats or skips fire
-- ('': Quartz-exact, 'once', 'once_skip_gap').
ALTER TABLE triggers ADD COLUMN jitter_ms bigint NOT NULL DEFAULT 0,
    ADD COLUMN dst_policy varchar(32) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE triggers DROP COLUMN dst_policy, DROP COLUMN jitter_ms;
