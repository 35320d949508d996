-- +goose Up
-- RegistryAt: the live instances at one address, of every app, read at each registration to
-- refuse an address another app's live executor holds.
CREATE INDEX registry_address_idx ON registry (address);

-- +goose Down
DROP INDEX registry_address_idx ON registry;
