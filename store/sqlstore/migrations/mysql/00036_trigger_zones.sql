-- +goose Up
-- One schedule in several time zones (docs/policies.md, "Zones"): a trigger listing zones is
-- stored as one row per zone. The row the API shows (zone_of 0) holds the first zone and, in
-- zones, the whole list (comma-separated; '' for a trigger of one zone); each further zone is a
-- row of its own with zone_of = that row's id, so every zone has its own next fire, lock and
-- fire key (trigger_id, scheduled_at), and the fire path is the one of any trigger.
ALTER TABLE triggers ADD COLUMN zone_of bigint NOT NULL DEFAULT 0;
ALTER TABLE triggers ADD COLUMN zones mediumtext NOT NULL DEFAULT '';
-- Pause, resume and delete of a trigger select its zone rows by zone_of.
CREATE INDEX triggers_zone_of_idx ON triggers (zone_of);
-- The zone a scheduled run fired in (its trigger row's zone), given to the run; '' for runs no
-- schedule made.
ALTER TABLE executions_live ADD COLUMN fire_zone varchar(64) NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN fire_zone varchar(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executions DROP COLUMN fire_zone;
ALTER TABLE executions_live DROP COLUMN fire_zone;
DROP INDEX triggers_zone_of_idx ON triggers;
ALTER TABLE triggers DROP COLUMN zones;
ALTER TABLE triggers DROP COLUMN zone_of;
