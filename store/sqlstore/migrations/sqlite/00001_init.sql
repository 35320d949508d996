-- +goose Up
-- Sundial schema, SQLite. Needs SQLite >= 3.35 (RETURNING, UPDATE ... FROM). Times are bigint Unix milliseconds UTC, 0 = none.

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    group_name        varchar(200) NOT NULL,
    name              varchar(200) NOT NULL,
    description       text NOT NULL DEFAULT '',
    target_kind       varchar(16) NOT NULL,
    handler           varchar(200) NOT NULL DEFAULT '',
    app               varchar(200) NOT NULL DEFAULT '',
    params            text NOT NULL DEFAULT '',
    data              text NOT NULL DEFAULT '',
    concurrency       varchar(16) NOT NULL DEFAULT 'allow',
    persist_data      integer NOT NULL DEFAULT 0,
    requests_recovery integer NOT NULL DEFAULT 0,
    timeout_ms        bigint NOT NULL DEFAULT 0,
    max_retries       integer NOT NULL DEFAULT 0,
    retry_backoff_ms  bigint NOT NULL DEFAULT 0,
    routing           varchar(32) NOT NULL DEFAULT '',
    alarm_targets     text NOT NULL DEFAULT '',
    child_job_ids     text NOT NULL DEFAULT '',
    enabled           integer NOT NULL DEFAULT 1,
    created_at        bigint NOT NULL,
    updated_at        bigint NOT NULL
);
-- JobGetByKey; the unique key itself.
CREATE UNIQUE INDEX jobs_group_name_key ON jobs (group_name, name);
-- JobList filtered by group, keyset on id.
CREATE INDEX jobs_group_id_idx ON jobs (group_name, id);

CREATE TABLE calendars (
    name        varchar(200) PRIMARY KEY,
    description text NOT NULL DEFAULT '',
    spec        text NOT NULL,
    base_name   varchar(200) REFERENCES calendars (name) ON DELETE RESTRICT,
    updated_at  bigint NOT NULL
);
-- CalendarDelete: the RESTRICT check on calendars chained onto this one.
CREATE INDEX calendars_base_idx ON calendars (base_name);

CREATE TABLE triggers (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id         bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    group_name     varchar(200) NOT NULL,
    name           varchar(200) NOT NULL,
    description    text NOT NULL DEFAULT '',
    kind           varchar(32) NOT NULL,
    spec           text NOT NULL DEFAULT '',
    time_zone      varchar(64) NOT NULL DEFAULT '',
    start_at       bigint NOT NULL DEFAULT 0,
    end_at         bigint NOT NULL DEFAULT 0,
    calendar_name  varchar(200) REFERENCES calendars (name) ON DELETE RESTRICT,
    priority       integer NOT NULL DEFAULT 5,
    misfire_policy varchar(64) NOT NULL DEFAULT '',
    state          varchar(16) NOT NULL,
    error_message  text NOT NULL DEFAULT '',
    next_fire_at   bigint NOT NULL DEFAULT 0,
    prev_fire_at   bigint NOT NULL DEFAULT 0,
    times_fired    bigint NOT NULL DEFAULT 0,
    version        bigint NOT NULL DEFAULT 1,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);
-- TriggerGetByKey; the unique key itself. Also TriggerList by group (keyset on id is a
-- filter over one group's rows).
CREATE UNIQUE INDEX triggers_group_name_key ON triggers (group_name, name);
-- TriggersLockDue: WHERE state = 'waiting' AND next_fire_at <= ? ORDER BY next_fire_at,
-- priority DESC. Partial, so it holds only the triggers that can fire.
CREATE INDEX triggers_due_idx ON triggers (next_fire_at, priority DESC) WHERE state = 'waiting';
-- TriggerList by job, JobDelete's cascade, TriggersPause/Resume by job.
CREATE INDEX triggers_job_idx ON triggers (job_id, id);
-- TriggersPause/Resume by group.
CREATE INDEX triggers_group_state_idx ON triggers (group_name, state);
-- CalendarDelete: the RESTRICT check.
CREATE INDEX triggers_calendar_idx ON triggers (calendar_name) WHERE calendar_name IS NOT NULL;

CREATE TABLE paused_groups (
    group_name varchar(200) PRIMARY KEY
);

-- No foreign keys: executions are history and outlive their jobs and triggers.
CREATE TABLE executions (
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
-- ExecutionsInsert: one execution per (trigger, scheduled time, attempt), the database's
-- guarantee against duplicate fires. Manual runs have a NULL trigger and are not limited.
CREATE UNIQUE INDEX executions_fire_key ON executions (trigger_id, scheduled_at, attempt);
-- ExecutionsLockDuePending: WHERE state = 'pending' AND scheduled_at <= ? ORDER BY scheduled_at.
CREATE INDEX executions_pending_idx ON executions (scheduled_at) WHERE state = 'pending';
-- ExecutionsReleaseAcquired / ExecutionsLoseRunning: a dead node's live executions.
CREATE INDEX executions_live_node_idx ON executions (node, state) WHERE state IN ('acquired', 'running');
-- The engine's concurrency policies: is a fire of this job live?
CREATE INDEX executions_live_job_idx ON executions (job_id) WHERE state IN ('pending', 'acquired', 'running');
-- Alarm sweep: failed executions whose alarm is not sent yet.
CREATE INDEX executions_alarm_idx ON executions (id) WHERE alarm_state = 'pending';
-- ExecutionList by job, keyset on id (both directions).
CREATE INDEX executions_job_idx ON executions (job_id, id);
-- ExecutionList by a failure state, keyset on id. Partial: a full (state, id) index would
-- take a new entry on every state change of every fire (three per fire), which measured
-- ~25 % of the fire rate; lists of the common states walk the primary key instead.
CREATE INDEX executions_failed_idx ON executions (state, id) WHERE state IN ('failed', 'timed_out', 'lost', 'canceled', 'skipped');
-- ExecutionList by fired time range; retention sweeps.
CREATE INDEX executions_fired_idx ON executions (fired_at);

CREATE TABLE execution_logs (
    execution_id bigint NOT NULL,
    line_no      bigint NOT NULL,
    logged_at    bigint NOT NULL,
    message      text NOT NULL,
    -- ExecutionLogList: WHERE execution_id = ? AND line_no > ? ORDER BY line_no.
    PRIMARY KEY (execution_id, line_no)
);

CREATE TABLE nodes (
    id         varchar(200) PRIMARY KEY,
    name       varchar(200) NOT NULL DEFAULT '',
    started_at bigint NOT NULL,
    last_seen  bigint NOT NULL
);

CREATE TABLE leases (
    name       varchar(200) PRIMARY KEY,
    holder     varchar(200) NOT NULL,
    token      bigint NOT NULL DEFAULT 0,
    expires_at bigint NOT NULL
);

-- +goose Down
DROP TABLE leases;
DROP TABLE nodes;
DROP TABLE execution_logs;
DROP TABLE executions;
DROP TABLE paused_groups;
DROP TABLE triggers;
DROP TABLE calendars;
DROP TABLE jobs;
