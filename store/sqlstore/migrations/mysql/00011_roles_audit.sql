-- +goose Up
-- Roles with a scope of apps, the scripts permission, disabled users and one-time password
-- reset tokens; tokens carry their own role, scope and last use; and the audit log of every
-- change. A scope is a comma-separated list of app names, or '*' for every app (what the
-- users and tokens made before roles had). MariaDB gives text columns no default before
-- 10.2, so the scopes are varchar.

ALTER TABLE users
    ADD COLUMN scope varchar(2000) NOT NULL DEFAULT '*',
    ADD COLUMN scripts boolean NOT NULL DEFAULT false,
    ADD COLUMN disabled boolean NOT NULL DEFAULT false,
    ADD COLUMN reset_hash varchar(64) NOT NULL DEFAULT '',
    ADD COLUMN reset_expires_at bigint NOT NULL DEFAULT 0;

ALTER TABLE api_tokens
    ADD COLUMN role varchar(16) NOT NULL DEFAULT '',
    ADD COLUMN scope varchar(2000) NOT NULL DEFAULT '*',
    ADD COLUMN scripts boolean NOT NULL DEFAULT false,
    ADD COLUMN last_used_at bigint NOT NULL DEFAULT 0;

CREATE TABLE audit_log (
    id          bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at          bigint NOT NULL,
    actor       varchar(190) NOT NULL DEFAULT '',
    source      varchar(190) NOT NULL DEFAULT '',
    action      varchar(64) NOT NULL,
    target_kind varchar(32) NOT NULL DEFAULT '',
    target      varchar(190) NOT NULL DEFAULT '',
    app         varchar(190) NOT NULL DEFAULT '',
    before_json mediumtext NOT NULL,
    after_json  mediumtext NOT NULL,
    -- The retention sweep, oldest first.
    KEY audit_log_at_idx (at),
    -- AuditList filtered by actor or target, newest first by id.
    KEY audit_log_actor_idx (actor, id),
    KEY audit_log_target_idx (target_kind, target, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE audit_log;
ALTER TABLE api_tokens DROP COLUMN last_used_at, DROP COLUMN scripts, DROP COLUMN scope, DROP COLUMN role;
ALTER TABLE users DROP COLUMN reset_expires_at, DROP COLUMN reset_hash, DROP COLUMN disabled, DROP COLUMN scripts, DROP COLUMN scope;
