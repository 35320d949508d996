-- +goose Up
-- A trigger's own params and data (Quartz's trigger JobDataMap): the engine gives a fire of
-- the trigger its params in place of the job's and its data merged over the job's. '' for
-- none. Params are sealed (package secret) when the job's are secret.
ALTER TABLE triggers ADD COLUMN params text NOT NULL DEFAULT '',
    ADD COLUMN data text NOT NULL DEFAULT '';

-- One app's fire-rate quota across the cluster (engine/quota.go): the starts the nodes gave its
-- fires within the last second, as the engine encodes them; every node takes its fires' start
-- slots under this row's lock, so the quota holds for the cluster, not per node.
CREATE TABLE fire_quota (
    app   text PRIMARY KEY,
    state text NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE fire_quota;
ALTER TABLE triggers DROP COLUMN data, DROP COLUMN params;
