-- +goose Up
-- Workflows: a named DAG of nodes referencing jobs, stored as one JSON graph (package workflow
-- validates it). Room is left for what comes later: a node kind for sub-workflows and map
-- steps lives in the graph, and a run's parent node (parent_node) links a sub-workflow's run.
CREATE TABLE workflows (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        varchar(200) NOT NULL,
    description varchar(1000) NOT NULL DEFAULT '',
    graph       text NOT NULL,
    params      text NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);
CREATE UNIQUE INDEX workflows_name_idx ON workflows (name);

-- A run keeps the graph it started with; its row is the lock every advance of it takes.
CREATE TABLE workflow_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id bigint NOT NULL,
    state       varchar(20) NOT NULL,
    graph       text NOT NULL,
    params      text NOT NULL,
    cause       varchar(20) NOT NULL DEFAULT '',
    message     varchar(2000) NOT NULL DEFAULT '',
    parent_node bigint NOT NULL DEFAULT 0,
    created_at  bigint NOT NULL,
    finished_at bigint NOT NULL DEFAULT 0
);
CREATE INDEX workflow_runs_workflow_idx ON workflow_runs (workflow_id, id);

-- One row per node of a run, inserted when the node starts (or is skipped): the unique
-- (run_id, node) makes a node's execution exactly-once per run.
CREATE TABLE workflow_nodes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       bigint NOT NULL,
    node         varchar(100) NOT NULL,
    state        varchar(20) NOT NULL,
    execution_id bigint NOT NULL DEFAULT 0,
    input        text NOT NULL,
    result       text NOT NULL,
    message      varchar(2000) NOT NULL DEFAULT '',
    updated_at   bigint NOT NULL
);
CREATE UNIQUE INDEX workflow_nodes_run_node_idx ON workflow_nodes (run_id, node);

-- The workflow node an execution runs (0 outside workflows): completion tests it, so a run
-- outside workflows costs no query.
ALTER TABLE executions_live ADD COLUMN workflow_node bigint NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN workflow_node bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE executions DROP COLUMN workflow_node;
ALTER TABLE executions_live DROP COLUMN workflow_node;
DROP TABLE workflow_nodes;
DROP TABLE workflow_runs;
DROP TABLE workflows;
