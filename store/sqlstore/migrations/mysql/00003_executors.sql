-- +goose Up
-- Executors: apps (executor groups) and the registry of their live instances.

CREATE TABLE apps (
    name         varchar(190) NOT NULL PRIMARY KEY,
    title        varchar(200) NOT NULL DEFAULT '',
    -- auto: the registry's live instances; manual: the addresses below.
    address_mode varchar(16) NOT NULL DEFAULT 'auto',
    addresses    text NOT NULL,
    protocol     varchar(16) NOT NULL DEFAULT 'native',
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE registry (
    app           varchar(190) NOT NULL,
    address       varchar(255) NOT NULL,
    handlers      text NOT NULL,
    registered_at bigint NOT NULL,
    -- Stamped with the database clock, so an executor's or node's skewed clock cannot keep
    -- an instance alive or make it look gone.
    last_seen     bigint NOT NULL,
    PRIMARY KEY (app, address),
    -- RegistryLive: the live instances of an app.
    KEY registry_app_seen_idx (app, last_seen),
    -- RegistrySweep: the silent instances of every app.
    KEY registry_seen_idx (last_seen)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A sharding-broadcast fire is one execution per shard: the fire key grows the shard index,
-- so each shard of a fire exists once and a fire (shard 0) still exists once. One ALTER, so
-- that an index on trigger_id exists at every moment.
ALTER TABLE executions DROP INDEX executions_fire_key,
    ADD UNIQUE KEY executions_fire_key (trigger_id, scheduled_at, attempt, shard_index),
    -- ExecutionsLoseOnExecutor: the running executions of an executor instance that left.
    ADD KEY executions_live_executor_idx (executor_address, state);

-- +goose Down
ALTER TABLE executions DROP INDEX executions_live_executor_idx, DROP INDEX executions_fire_key,
    ADD UNIQUE KEY executions_fire_key (trigger_id, scheduled_at, attempt);
DROP TABLE registry;
DROP TABLE apps;
