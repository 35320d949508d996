-- +goose Up
-- The version an executor reports when it registers (its Sundial SDK, or what its program
-- says it is), shown by `sundial executor list`: an operator rolling out executors sees
-- which instances still run the old build.
ALTER TABLE registry ADD COLUMN version varchar(100) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE registry DROP COLUMN version;
