-- +goose Up
-- An executor address belongs to one app, and an xxl-job access token to one app: both were
-- checked by a read before the write, so two requests racing could both pass. The unique keys
-- decide now (RegistryBeat, AppPut). Rows that already break them came from such a race: of
-- the apps at one address the one seen last keeps it (the others' rows would be swept soon
-- anyway), and of the apps sharing a token the first by name keeps it (the others must be
-- given a token of their own: the shared one let each act as the other).
DELETE r FROM registry r JOIN registry o
    ON o.address = r.address AND (o.last_seen > r.last_seen OR (o.last_seen = r.last_seen AND o.app < r.app));
DROP INDEX registry_address_idx ON registry;
CREATE UNIQUE INDEX registry_address_key ON registry (address);
UPDATE apps a JOIN apps o ON o.xxl_token_hash = a.xxl_token_hash AND o.name < a.name
   SET a.xxl_token_hash = '', a.xxl_token_sealed = '' WHERE a.xxl_token_hash <> '';
-- MySQL has no partial index: the key is NULL (which never collides) for apps without a token.
ALTER TABLE apps ADD COLUMN xxl_token_key varchar(64) AS (NULLIF(xxl_token_hash, '')) VIRTUAL;
CREATE UNIQUE INDEX apps_xxl_token_key ON apps (xxl_token_key);

-- +goose Down
DROP INDEX apps_xxl_token_key ON apps;
ALTER TABLE apps DROP COLUMN xxl_token_key;
DROP INDEX registry_address_key ON registry;
CREATE INDEX registry_address_idx ON registry (address);
