-- +goose Up
--
-- A node's identity is its id and its incarnation: a random id each start of the node (and
-- each rejoin after the cluster declared it dead) chooses. The nodes row names the life that
-- heartbeats, and every execution a node acquires names the life that acquired it, so that
-- a node restarted under the same id recovers its earlier life's work at once, and a node
-- that froze past the timeout can change nothing the cluster has taken from it.
ALTER TABLE nodes ADD COLUMN incarnation varchar(32) NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN incarnation varchar(32) NOT NULL DEFAULT '';
ALTER TABLE executions_live ADD COLUMN incarnation varchar(32) NOT NULL DEFAULT '';
-- Runs handed to an executor are the executor's once it accepted them (trigger_code 200);
-- those recorded before this migration were sent under the old rule, which did not tell.
UPDATE executions_live SET trigger_code = 200 WHERE state = 'running' AND executor_address <> '';

-- +goose Down
ALTER TABLE executions_live DROP COLUMN incarnation;
ALTER TABLE executions DROP COLUMN incarnation;
ALTER TABLE nodes DROP COLUMN incarnation;
