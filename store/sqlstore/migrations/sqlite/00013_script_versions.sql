-- +goose Up
-- Script versions: each save of a script job's script (its params) with the operator's note,
-- so an older script can be compared and restored (XXL-JOB's GLUE history). The store keeps
-- the newest few per job; version numbers count up per job and are never reused.
CREATE TABLE script_versions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id     bigint NOT NULL,
    version    bigint NOT NULL,
    script     text NOT NULL,
    note       varchar(500) NOT NULL DEFAULT '',
    created_at bigint NOT NULL
);
CREATE UNIQUE INDEX script_versions_job_version_idx ON script_versions (job_id, version);

-- +goose Down
DROP TABLE script_versions;
