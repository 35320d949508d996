-- +goose Up
-- An executor address belongs to one app, and an xxl-job access token to one app: both were
-- checked by a read before the write, so two requests racing could both pass. The unique keys
-- decide now (RegistryBeat, AppPut). Rows that already break them came from such a race: of
-- the apps at one address the one seen last keeps it (the others' rows would be swept soon
-- anyway), and of the apps sharing a token the first by name keeps it (the others must be
-- given a token of their own: the shared one let each act as the other).
DELETE FROM registry WHERE EXISTS (SELECT 1 FROM registry o WHERE o.address = registry.address
   AND (o.last_seen > registry.last_seen OR (o.last_seen = registry.last_seen AND o.app < registry.app)));
DROP INDEX registry_address_idx;
CREATE UNIQUE INDEX registry_address_key ON registry (address);
UPDATE apps SET xxl_token_hash = '', xxl_token_sealed = ''
 WHERE xxl_token_hash <> '' AND EXISTS (SELECT 1 FROM apps o WHERE o.xxl_token_hash = apps.xxl_token_hash AND o.name < apps.name);
CREATE UNIQUE INDEX apps_xxl_token_key ON apps (xxl_token_hash) WHERE xxl_token_hash <> '';

-- +goose Down
DROP INDEX apps_xxl_token_key;
DROP INDEX registry_address_key;
CREATE INDEX registry_address_idx ON registry (address);
