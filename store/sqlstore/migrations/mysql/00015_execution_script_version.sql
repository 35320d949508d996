-- +goose Up
-- The version of a script job's script that an execution ran, and the parameters a run-now
-- gave in place of the job's own ('': the job's). jobs.script_version is the job's current
-- version, kept in the transaction that saves the script, so that marking a fire running
-- stamps it with one primary-key read (ExecutionsMarkRunning). 0 is "not a script job".
ALTER TABLE jobs ADD COLUMN script_version bigint NOT NULL DEFAULT 0;
UPDATE jobs SET script_version = COALESCE((SELECT MAX(s.version) FROM script_versions s WHERE s.job_id = jobs.id), 0);
-- The live table and the history keep the same columns in the same order (00005).
ALTER TABLE executions ADD COLUMN script_version bigint NOT NULL DEFAULT 0, ADD COLUMN params mediumtext NOT NULL;
ALTER TABLE executions_live ADD COLUMN script_version bigint NOT NULL DEFAULT 0, ADD COLUMN params mediumtext NOT NULL;

-- +goose Down
ALTER TABLE executions_live DROP COLUMN script_version, DROP COLUMN params;
ALTER TABLE executions DROP COLUMN script_version, DROP COLUMN params;
ALTER TABLE jobs DROP COLUMN script_version;
