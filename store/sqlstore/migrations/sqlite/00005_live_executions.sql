-- +goose Up
--
-- Executions that are not over (pending, acquired, running) live in a table of their own, and
-- an execution is written to the history table `executions` once, when it ends: the hot path
-- works on a small table, and the history's indexes are written once per execution instead of
-- on every state change.

CREATE TABLE executions_live (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id           bigint NOT NULL,
    trigger_id       bigint,
    scheduled_at     bigint NOT NULL,
    fired_at         bigint NOT NULL DEFAULT 0,
    cause            varchar(16) NOT NULL,
    attempt          integer NOT NULL DEFAULT 0,
    node             varchar(200) NOT NULL DEFAULT '',
    executor_address varchar(255) NOT NULL DEFAULT '',
    shard_index      integer NOT NULL DEFAULT 0,
    shard_total      integer NOT NULL DEFAULT 0,
    state            varchar(16) NOT NULL,
    trigger_code     integer NOT NULL DEFAULT 0,
    trigger_msg      text NOT NULL DEFAULT '',
    handle_code      integer NOT NULL DEFAULT 0,
    handle_msg       text NOT NULL DEFAULT '',
    started_at       bigint NOT NULL DEFAULT 0,
    finished_at      bigint NOT NULL DEFAULT 0,
    alarm_state      varchar(16) NOT NULL DEFAULT 'none',
    data             text NOT NULL DEFAULT ''
);
-- Ids continue the history's, so an execution keeps its id when it moves there.
INSERT INTO sqlite_sequence (name, seq) SELECT 'executions_live', COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'executions';
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
