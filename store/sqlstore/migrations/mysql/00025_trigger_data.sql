-- +goose Up
-- A trigger's own params and data (Quartz's trigger JobDataMap): the engine gives a fire of
-- the trigger its params in place of the job's and its data merged over the job's. '' for
-- none. Params are sealed (package secret) when the job's are secret, which grows them by a
-- third: mediumtext, as the jobs' params.
ALTER TABLE triggers ADD COLUMN params mediumtext NOT NULL DEFAULT '',
    ADD COLUMN data mediumtext NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE triggers DROP COLUMN data, DROP COLUMN params;
