-- +goose Up
-- A trigger's own params and data (Quartz's trigger JobDataMap): the engine gives a fire of
-- the trigger its params in place of the job's and its data merged over the job's. '' for
-- none. Params are sealed (package secret) when the job's are secret, which grows them by a
-- third: mediumtext, as the jobs' params.
ALTER TABLE triggers ADD COLUMN params mediumtext NOT NULL DEFAULT '',
    ADD COLUMN data mediumtext NOT NULL DEFAULT '';

-- One app's fire-rate quota across the cluster (engine/quota.go): the starts the nodes gave its
-- fires within the last second, as the engine encodes them; every node takes its fires' start
-- slots under this row's lock, so the quota holds for the cluster, not per node.
CREATE TABLE fire_quota (
    app   varchar(190) NOT NULL PRIMARY KEY,
    state mediumtext NOT NULL
);

-- +goose Down
DROP TABLE fire_quota;
ALTER TABLE triggers DROP COLUMN data, DROP COLUMN params;
