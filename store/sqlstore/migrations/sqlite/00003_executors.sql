-- +goose Up
-- Executors: apps (executor groups) and the registry of their live instances.

CREATE TABLE apps (
    name         varchar(190) PRIMARY KEY,
    title        varchar(200) NOT NULL DEFAULT '',
    -- auto: the registry's live instances; manual: the addresses below.
    address_mode varchar(16) NOT NULL DEFAULT 'auto',
    addresses    text NOT NULL DEFAULT '',
    protocol     varchar(16) NOT NULL DEFAULT 'native',
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL
);

CREATE TABLE registry (
    app           varchar(190) NOT NULL,
    address       varchar(255) NOT NULL,
    handlers      text NOT NULL DEFAULT '',
    registered_at bigint NOT NULL,
    -- Stamped with the database clock, so an executor's or node's skewed clock cannot keep
    -- an instance alive or make it look gone.
    last_seen     bigint NOT NULL,
    PRIMARY KEY (app, address)
);
-- RegistryLive: the live instances of an app.
CREATE INDEX registry_app_seen_idx ON registry (app, last_seen);
-- RegistrySweep: the silent instances of every app.
CREATE INDEX registry_seen_idx ON registry (last_seen);

-- A sharding-broadcast fire is one execution per shard: the fire key grows the shard index,
-- so each shard of a fire exists once and a fire (shard 0) still exists once.
DROP INDEX executions_fire_key;
CREATE UNIQUE INDEX executions_fire_key ON executions (trigger_id, scheduled_at, attempt, shard_index);
-- ExecutionsLoseOnExecutor: the running executions of an executor instance that left.
CREATE INDEX executions_live_executor_idx ON executions (executor_address) WHERE state = 'running';

-- +goose Down
DROP INDEX executions_live_executor_idx;
DROP INDEX executions_fire_key;
CREATE UNIQUE INDEX executions_fire_key ON executions (trigger_id, scheduled_at, attempt);
DROP TABLE registry;
DROP TABLE apps;
