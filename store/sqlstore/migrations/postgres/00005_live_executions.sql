-- +goose Up
--
-- Executions that are not over (pending, acquired, running) live in a table of their own, and
-- an execution is written to the history table `executions` once, when it ends. Every fire
-- goes through acquired -> running -> a result: on one table that was an insert and two
-- updates of a wide row whose state several indexes track, each update a new tuple with a new
-- entry in every index. Here the live table's indexes name no column that the start changes
-- (state, fired_at), so acquired -> running is a heap-only update, the history row is
-- inserted once with its final values, and the live table stays small enough to stay cached.

-- The same columns as executions; ids come from the same sequence, so an execution keeps its
-- id when it moves to the history.
CREATE TABLE executions_live (LIKE executions INCLUDING DEFAULTS) WITH (fillfactor = 70);
ALTER TABLE executions_live ADD PRIMARY KEY (id);
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER TABLE executions_live ALTER COLUMN id SET DEFAULT nextval(%L)',
        pg_get_serial_sequence('executions', 'id'));
    -- Rows written with explicit ids (a restore, say) did not advance the sequence.
    PERFORM setval(pg_get_serial_sequence('executions', 'id'),
        GREATEST(nextval(pg_get_serial_sequence('executions', 'id')), (SELECT COALESCE(MAX(id), 0) + 1 FROM executions)), false);
END
$$;
-- +goose StatementEnd
-- ExecutionsInsert: one live execution per fire key (the history has the same key).
CREATE UNIQUE INDEX executions_live_fire_key ON executions_live (trigger_id, scheduled_at, attempt, shard_index);
-- ExecutionsLockDuePending: pending executions belong to no node, and only they.
CREATE INDEX executions_live_pending_idx ON executions_live (scheduled_at) WHERE node = '';
-- ExecutionsCountLive and JobDelete: a job's live executions.
CREATE INDEX executions_live_job_idx2 ON executions_live (job_id);
-- No index on node or executor_address. A dead node or executor is found by a scan of this
-- small table, which is rare and cheap; an index on node, which all of a node's rows share,
-- would tempt the planner away from the primary key in the hot compare-and-sets by id, and
-- one on executor_address would make each remote dispatch a non-heap-only update.

INSERT INTO executions_live SELECT * FROM executions WHERE state IN ('pending', 'acquired', 'running');
DELETE FROM executions WHERE state IN ('pending', 'acquired', 'running');
UPDATE executions_live SET node = '' WHERE state = 'pending';

-- The history's indexes for live work go with it.
DROP INDEX executions_pending_idx;
DROP INDEX executions_live_node_idx;
DROP INDEX executions_live_job_idx;
DROP INDEX executions_live_executor_idx;

-- +goose Down
CREATE INDEX executions_pending_idx ON executions (scheduled_at) WHERE state = 'pending';
CREATE INDEX executions_live_node_idx ON executions (node, state) WHERE state IN ('acquired', 'running');
CREATE INDEX executions_live_job_idx ON executions (job_id) WHERE state IN ('pending', 'acquired', 'running');
CREATE INDEX executions_live_executor_idx ON executions (executor_address) WHERE state = 'running';
INSERT INTO executions SELECT * FROM executions_live;
DROP TABLE executions_live;
