-- +goose Up
-- Executor instances and kill requests.

-- The executor process that registered at an address: a random id it picks at start, so an
-- executor restarted on the same address is told from the one before it.
ALTER TABLE registry ADD COLUMN instance varchar(64) NOT NULL DEFAULT '';
-- The instance a run was handed to. Only live rows carry it: it decides whether a run is lost
-- when its executor restarts, and means nothing once the run has ended.
ALTER TABLE executions_live ADD COLUMN executor_instance varchar(64) NOT NULL DEFAULT '';

-- Kill requests for in-process runs, recorded by whichever node the API request reached and
-- taken by the node running them. Almost always empty: a node reads it by its own name.
CREATE TABLE kill_requests (
    execution_id bigint PRIMARY KEY,
    node         varchar(200) NOT NULL,
    requested_at bigint NOT NULL
);
CREATE INDEX kill_requests_node_idx ON kill_requests (node);

-- +goose Down
DROP TABLE kill_requests;
ALTER TABLE executions_live DROP COLUMN executor_instance;
ALTER TABLE registry DROP COLUMN instance;
