-- +goose Up
-- Roles with a scope of apps, the scripts permission, disabled users and one-time password
-- reset tokens; tokens carry their own role, scope and last use; and the audit log of every
-- change. A scope is a comma-separated list of app names, or '*' for every app (what the
-- users and tokens made before roles had).

ALTER TABLE users ADD COLUMN scope text NOT NULL DEFAULT '*';
ALTER TABLE users ADD COLUMN scripts boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN disabled boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN reset_hash varchar(64) NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN reset_expires_at bigint NOT NULL DEFAULT 0;

ALTER TABLE api_tokens ADD COLUMN role varchar(16) NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN scope text NOT NULL DEFAULT '*';
ALTER TABLE api_tokens ADD COLUMN scripts boolean NOT NULL DEFAULT false;
ALTER TABLE api_tokens ADD COLUMN last_used_at bigint NOT NULL DEFAULT 0;

CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          bigint NOT NULL,
    actor       varchar(200) NOT NULL DEFAULT '',
    source      varchar(200) NOT NULL DEFAULT '',
    action      varchar(64) NOT NULL,
    target_kind varchar(32) NOT NULL DEFAULT '',
    target      varchar(400) NOT NULL DEFAULT '',
    app         varchar(200) NOT NULL DEFAULT '',
    before_json text NOT NULL DEFAULT '',
    after_json  text NOT NULL DEFAULT ''
);
-- The retention sweep, oldest first.
CREATE INDEX audit_log_at_idx ON audit_log (at);
-- AuditList filtered by actor or target, newest first by id.
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id);
CREATE INDEX audit_log_target_idx ON audit_log (target_kind, target, id);

-- +goose Down
DROP TABLE audit_log;
ALTER TABLE api_tokens DROP COLUMN last_used_at;
ALTER TABLE api_tokens DROP COLUMN scripts;
ALTER TABLE api_tokens DROP COLUMN scope;
ALTER TABLE api_tokens DROP COLUMN role;
ALTER TABLE users DROP COLUMN reset_expires_at;
ALTER TABLE users DROP COLUMN reset_hash;
ALTER TABLE users DROP COLUMN disabled;
ALTER TABLE users DROP COLUMN scripts;
ALTER TABLE users DROP COLUMN scope;
