-- +goose Up
-- The cluster's key pairs for signing server → executor calls (docs/executor-protocol.md,
-- "Signed calls"): made once by the first node that needs one and shared by every node of the
-- database; a rotation adds the next generation. Executors receive the public keys of the two
-- newest generations with every heartbeat answer; the private key never leaves the cluster.
CREATE TABLE cluster_keys (
    generation  bigint NOT NULL PRIMARY KEY,
    public_key  varchar(100) NOT NULL,
    private_key varchar(100) NOT NULL,
    created_at  bigint NOT NULL
);

-- The instance a run was handed to, kept in the history for runs declared lost only (written
-- as they are lost): a late result is taken only from that instance. Empty for every other.
ALTER TABLE executions ADD COLUMN executor_instance varchar(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executions DROP COLUMN executor_instance;
DROP TABLE cluster_keys;
