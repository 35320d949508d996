-- +goose Up
-- Sundial schema, MySQL 8 / MariaDB >= 10.6 (InnoDB, utf8mb4). Times are bigint Unix
-- milliseconds UTC, 0 = none. Names are varchar(190) so that utf8mb4 keys fit InnoDB's index
-- length limit. MySQL has no partial indexes: the hot ones lead with the state instead.

CREATE TABLE jobs (
    id                bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    group_name        varchar(190) NOT NULL,
    name              varchar(190) NOT NULL,
    description       text NOT NULL,
    target_kind       varchar(16) NOT NULL,
    handler           varchar(190) NOT NULL DEFAULT '',
    app               varchar(190) NOT NULL DEFAULT '',
    params            text NOT NULL,
    data              mediumtext NOT NULL,
    concurrency       varchar(16) NOT NULL DEFAULT 'allow',
    persist_data      boolean NOT NULL DEFAULT false,
    requests_recovery boolean NOT NULL DEFAULT false,
    timeout_ms        bigint NOT NULL DEFAULT 0,
    max_retries       integer NOT NULL DEFAULT 0,
    retry_backoff_ms  bigint NOT NULL DEFAULT 0,
    routing           varchar(32) NOT NULL DEFAULT '',
    alarm_targets     text NOT NULL,
    child_job_ids     text NOT NULL,
    enabled           boolean NOT NULL DEFAULT true,
    created_at        bigint NOT NULL,
    updated_at        bigint NOT NULL,
    -- JobGetByKey; the unique key itself.
    UNIQUE KEY jobs_group_name_key (group_name, name),
    -- JobList filtered by group, keyset on id.
    KEY jobs_group_id_idx (group_name, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE calendars (
    name        varchar(190) NOT NULL PRIMARY KEY,
    description text NOT NULL,
    spec        mediumtext NOT NULL,
    base_name   varchar(190) NULL,
    updated_at  bigint NOT NULL,
    -- CalendarDelete: the RESTRICT check on calendars chained onto this one.
    KEY calendars_base_idx (base_name),
    CONSTRAINT calendars_base_fk FOREIGN KEY (base_name) REFERENCES calendars (name) ON DELETE RESTRICT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE triggers (
    id             bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id         bigint NOT NULL,
    group_name     varchar(190) NOT NULL,
    name           varchar(190) NOT NULL,
    description    text NOT NULL,
    kind           varchar(32) NOT NULL,
    spec           text NOT NULL,
    time_zone      varchar(64) NOT NULL DEFAULT '',
    start_at       bigint NOT NULL DEFAULT 0,
    end_at         bigint NOT NULL DEFAULT 0,
    calendar_name  varchar(190) NULL,
    priority       integer NOT NULL DEFAULT 5,
    misfire_policy varchar(64) NOT NULL DEFAULT '',
    state          varchar(16) NOT NULL,
    error_message  text NOT NULL,
    next_fire_at   bigint NOT NULL DEFAULT 0,
    prev_fire_at   bigint NOT NULL DEFAULT 0,
    times_fired    bigint NOT NULL DEFAULT 0,
    version        bigint NOT NULL DEFAULT 1,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    -- TriggerGetByKey; the unique key itself.
    UNIQUE KEY triggers_group_name_key (group_name, name),
    -- TriggersLockDue: WHERE state = 'waiting' AND next_fire_at <= ? ORDER BY next_fire_at,
    -- priority DESC (DESC is honoured by MySQL 8 and MariaDB >= 10.8).
    KEY triggers_due_idx (state, next_fire_at, priority DESC),
    -- TriggerList by job, JobDelete's cascade, TriggersPause/Resume by job.
    KEY triggers_job_idx (job_id, id),
    -- TriggersPause/Resume by group.
    KEY triggers_group_state_idx (group_name, state),
    -- CalendarDelete: the RESTRICT check.
    KEY triggers_calendar_idx (calendar_name),
    CONSTRAINT triggers_job_fk FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE,
    CONSTRAINT triggers_calendar_fk FOREIGN KEY (calendar_name) REFERENCES calendars (name) ON DELETE RESTRICT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE paused_groups (
    group_name varchar(190) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- No foreign keys: executions are history and outlive their jobs and triggers.
CREATE TABLE executions (
    id               bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id           bigint NOT NULL,
    trigger_id       bigint NULL,
    scheduled_at     bigint NOT NULL,
    fired_at         bigint NOT NULL DEFAULT 0,
    cause            varchar(16) NOT NULL,
    attempt          integer NOT NULL DEFAULT 0,
    node             varchar(190) NOT NULL DEFAULT '',
    executor_address varchar(255) NOT NULL DEFAULT '',
    shard_index      integer NOT NULL DEFAULT 0,
    shard_total      integer NOT NULL DEFAULT 0,
    state            varchar(16) NOT NULL,
    trigger_code     integer NOT NULL DEFAULT 0,
    trigger_msg      text NOT NULL,
    handle_code      integer NOT NULL DEFAULT 0,
    handle_msg       text NOT NULL,
    started_at       bigint NOT NULL DEFAULT 0,
    finished_at      bigint NOT NULL DEFAULT 0,
    alarm_state      varchar(16) NOT NULL DEFAULT 'none',
    data             mediumtext NOT NULL,
    -- ExecutionsInsert: one execution per (trigger, scheduled time, attempt), the database's
    -- guarantee against duplicate fires. Manual runs have a NULL trigger and are not limited.
    UNIQUE KEY executions_fire_key (trigger_id, scheduled_at, attempt),
    -- ExecutionsLockDuePending: WHERE state = 'pending' AND scheduled_at <= ? ORDER BY
    -- scheduled_at.
    KEY executions_state_sched_idx (state, scheduled_at),
    -- ExecutionList by state, keyset on id.
    KEY executions_state_idx (state, id),
    -- ExecutionsReleaseAcquired / ExecutionsLoseRunning: a dead node's live executions.
    KEY executions_node_idx (node, state),
    -- The engine's concurrency policies: is a fire of this job live?
    KEY executions_job_state_idx (job_id, state),
    -- Alarm sweep: failed executions whose alarm is not sent yet.
    KEY executions_alarm_idx (alarm_state, id),
    -- ExecutionList by job, keyset on id (both directions).
    KEY executions_job_idx (job_id, id),
    -- ExecutionList by fired time range; retention sweeps.
    KEY executions_fired_idx (fired_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE execution_logs (
    execution_id bigint NOT NULL,
    line_no      bigint NOT NULL,
    logged_at    bigint NOT NULL,
    message      text NOT NULL,
    -- ExecutionLogList: WHERE execution_id = ? AND line_no > ? ORDER BY line_no.
    PRIMARY KEY (execution_id, line_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE nodes (
    id         varchar(190) NOT NULL PRIMARY KEY,
    name       varchar(190) NOT NULL DEFAULT '',
    started_at bigint NOT NULL,
    last_seen  bigint NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE leases (
    name       varchar(190) NOT NULL PRIMARY KEY,
    holder     varchar(190) NOT NULL,
    token      bigint NOT NULL DEFAULT 0,
    expires_at bigint NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE leases;
DROP TABLE nodes;
DROP TABLE execution_logs;
DROP TABLE executions;
DROP TABLE paused_groups;
DROP TABLE triggers;
DROP TABLE calendars;
DROP TABLE jobs;
