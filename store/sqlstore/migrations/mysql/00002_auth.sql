-- +goose Up
-- People and their credentials. Secrets are never stored: passwords as bcrypt hashes, API
-- tokens and session cookies as the SHA-256 of their random secret.

CREATE TABLE users (
    id            bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name          varchar(190) NOT NULL,
    password_hash varchar(200) NOT NULL,
    role          varchar(16) NOT NULL,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL,
    -- UserGetByName; the unique key that makes first-start admin creation happen once.
    UNIQUE KEY users_name_key (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_tokens (
    id         bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id    bigint NOT NULL,
    name       varchar(190) NOT NULL DEFAULT '',
    hash       varchar(64) NOT NULL,
    prefix     varchar(16) NOT NULL DEFAULT '',
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL DEFAULT 0,
    -- APITokenGetByHash: every authenticated request.
    UNIQUE KEY api_tokens_hash_key (hash),
    -- APITokenList by user, keyset on id; the user's cascade.
    KEY api_tokens_user_idx (user_id, id),
    CONSTRAINT api_tokens_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE sessions (
    hash       varchar(64) NOT NULL PRIMARY KEY,
    user_id    bigint NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    -- SessionsDeleteExpired.
    KEY sessions_expires_idx (expires_at),
    -- The user's cascade.
    KEY sessions_user_idx (user_id),
    CONSTRAINT sessions_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE sessions;
DROP TABLE api_tokens;
DROP TABLE users;
