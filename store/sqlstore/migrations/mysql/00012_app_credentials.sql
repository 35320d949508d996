-- +goose Up
-- Executor credentials per app: an executor presenting one may register, beat and report for
-- its app only. Stored as the SHA-256 of the secret, like API tokens; shown once at creation
-- or rotation. One per app: rotating replaces it, so the old one stops working at once.
CREATE TABLE app_credentials (
    app        varchar(190) NOT NULL PRIMARY KEY,
    hash       varchar(64) NOT NULL,
    created_at bigint NOT NULL,
    rotated_at bigint NOT NULL DEFAULT 0
);
-- AppCredentialByHash: every executor request.
CREATE UNIQUE INDEX app_credentials_hash_idx ON app_credentials (hash);

-- +goose Down
DROP TABLE app_credentials;
