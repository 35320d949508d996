-- +goose Up
-- A trigger's own params and data (Quartz's trigger JobDataMap): the engine gives a fire of
-- the trigger its params in place of the job's and its data merged over the job's. '' for
-- none. Params are sealed (package secret) when the job's are secret.
ALTER TABLE triggers ADD COLUMN params text NOT NULL DEFAULT '';
ALTER TABLE triggers ADD COLUMN data text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE triggers DROP COLUMN data;
ALTER TABLE triggers DROP COLUMN params;
