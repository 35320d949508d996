-- +goose Up
-- A calendar's own zone (an IANA name): its exclusions are read in it, as Quartz converts a
-- fire time to its calendar's TimeZone before the check. '' keeps the old rule: the calendar
-- is read in the zone of the trigger it modifies.
ALTER TABLE calendars ADD COLUMN time_zone varchar(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE calendars DROP COLUMN time_zone;
