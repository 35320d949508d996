-- +goose Up
-- People and their credentials. Secrets are never stored: passwords as bcrypt hashes, API
-- tokens and session cookies as the SHA-256 of their random secret.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          varchar(200) NOT NULL,
    password_hash varchar(200) NOT NULL,
    role          varchar(16) NOT NULL,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL
);
-- UserGetByName; the unique key that makes first-start admin creation happen once.
CREATE UNIQUE INDEX users_name_key ON users (name);

CREATE TABLE api_tokens (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       varchar(200) NOT NULL DEFAULT '',
    hash       varchar(64) NOT NULL,
    prefix     varchar(16) NOT NULL DEFAULT '',
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL DEFAULT 0
);
-- APITokenGetByHash: every authenticated request.
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (hash);
-- APITokenList by user, keyset on id; the user's cascade.
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);

CREATE TABLE sessions (
    hash       varchar(64) PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);
-- SessionsDeleteExpired.
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
-- The user's cascade.
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- +goose Down
DROP TABLE sessions;
DROP TABLE api_tokens;
DROP TABLE users;
