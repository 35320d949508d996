-- +goose Up
-- Map/reduce: a running execution may split into sub-tasks (rows here), run by any node or
-- executor of its job with their own attempts, and is reduced once all are terminal.
-- A sub-task is claimed (pending -> running, attempt + 1, owner) and completed by a
-- compare-and-set on its state, attempt and owner, so a result is accepted once.
CREATE TABLE subtasks (
    id           bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    execution_id bigint NOT NULL,
    job_id       bigint NOT NULL,
    handler      varchar(200) NOT NULL,
    parent_id    bigint NOT NULL DEFAULT 0,
    depth        int NOT NULL DEFAULT 1,
    seq          int NOT NULL,
    payload      mediumtext NOT NULL,
    state        varchar(20) NOT NULL,
    attempt      int NOT NULL DEFAULT 0,
    max_attempts int NOT NULL DEFAULT 1,
    owner        varchar(300) NOT NULL DEFAULT '',
    result       mediumtext NOT NULL,
    message      varchar(2000) NOT NULL DEFAULT '',
    created_at   bigint NOT NULL,
    claimed_at   bigint NOT NULL DEFAULT 0,
    finished_at  bigint NOT NULL DEFAULT 0
);
-- A map call repeated by a re-run of the sub-task that made it inserts nothing twice.
CREATE UNIQUE INDEX subtasks_parent_seq_idx ON subtasks (execution_id, parent_id, seq);
CREATE INDEX subtasks_claim_idx ON subtasks (state, handler, id);
CREATE INDEX subtasks_execution_idx ON subtasks (execution_id, state);

-- One row per execution that mapped: while it exists the execution waits for its sub-tasks
-- (no worker held, not lost with the node that started it); its owner runs the reduce.
CREATE TABLE subtask_maps (
    execution_id bigint NOT NULL PRIMARY KEY,
    job_id       bigint NOT NULL,
    handler      varchar(200) NOT NULL,
    state        varchar(20) NOT NULL,
    owner        varchar(300) NOT NULL DEFAULT '',
    total        bigint NOT NULL DEFAULT 0,
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL
);
CREATE INDEX subtask_maps_state_idx ON subtask_maps (state, handler);

-- +goose Down
DROP TABLE subtask_maps;
DROP TABLE subtasks;
