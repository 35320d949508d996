-- +goose Up
-- A job's alarm policy (threshold, window, silence, recovery notice) as JSON, '' for the
-- default: every final failure alarms.
ALTER TABLE jobs ADD COLUMN alarm_policy mediumtext NOT NULL DEFAULT '';

-- Each job's alarm bookkeeping (package alarm's Step): the failures counted, the open
-- incident, the last alarm's time and the latest decisions, as JSON. The node that delivers
-- alarms writes it with a compare-and-set on version, so a restart or a change of leader
-- counts on where the last one stopped and a crossing of the threshold alarms once.
CREATE TABLE job_alarms (
    job_id  bigint NOT NULL PRIMARY KEY,
    state   mediumtext NOT NULL,
    version bigint NOT NULL
);

-- +goose Down
DROP TABLE job_alarms;
ALTER TABLE jobs DROP COLUMN alarm_policy;
