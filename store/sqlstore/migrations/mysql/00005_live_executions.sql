-- +goose Up
--
-- Executions that are not over (pending, acquired, running) live in a table of their own, and
-- an execution is written to the history table `executions` once, when it ends. No secondary
-- index of the live table names a column that starting a fire changes (state, fired_at), so
-- InnoDB updates the clustered row alone, and the history's indexes are written once per
-- execution instead of on every state change.

CREATE TABLE executions_live LIKE executions;
ALTER TABLE executions_live
    DROP INDEX executions_state_sched_idx,
    DROP INDEX executions_state_idx,
    DROP INDEX executions_node_idx,
    DROP INDEX executions_job_state_idx,
    DROP INDEX executions_alarm_idx,
    DROP INDEX executions_job_idx,
    DROP INDEX executions_fired_idx,
    DROP INDEX executions_live_executor_idx,
    -- ExecutionsLockDuePending: WHERE state = 'pending' AND scheduled_at <= ?. InnoDB
    -- changes a secondary index only where its columns change, so tracking state costs
    -- little here.
    ADD KEY executions_live_pending_idx (state, scheduled_at),
    -- ExecutionsCountLive and JobDelete: a job's live executions.
    ADD KEY executions_live_job_idx (job_id);
    -- No index on node or executor_address: a dead node or executor is found by a scan of
    -- this small table, and the hot compare-and-sets by id keep to the primary key.
-- Ids continue the history's, so an execution keeps its id when it moves there: a row at the
-- history's last id sets the live table's counter (persistent in MariaDB and MySQL 8).
INSERT INTO executions_live (id, job_id, scheduled_at, cause, state, trigger_msg, handle_msg, data)
    SELECT COALESCE(MAX(id), 0) + 1, 0, 0, 'manual', 'canceled', '', '', '' FROM executions;
DELETE FROM executions_live;
INSERT INTO executions_live SELECT * FROM executions WHERE state IN ('pending', 'acquired', 'running');
DELETE FROM executions WHERE state IN ('pending', 'acquired', 'running');
UPDATE executions_live SET node = '' WHERE state = 'pending';

ALTER TABLE executions
    DROP INDEX executions_state_sched_idx,
    DROP INDEX executions_node_idx,
    DROP INDEX executions_job_state_idx,
    DROP INDEX executions_live_executor_idx;

-- +goose Down
ALTER TABLE executions
    ADD KEY executions_state_sched_idx (state, scheduled_at),
    ADD KEY executions_node_idx (node, state),
    ADD KEY executions_job_state_idx (job_id, state),
    ADD KEY executions_live_executor_idx (executor_address, state);
INSERT INTO executions SELECT * FROM executions_live;
DROP TABLE executions_live;
