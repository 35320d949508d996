-- +goose Up
-- The app whose executor a run was handed to, recorded at dispatch: what that app's executor
-- reports about the run (its output, its result) is checked against it, not against the job,
-- so a run whose job was deleted meanwhile still keeps everything it sends. Live rows carry
-- it, and the history for lost runs (a late result), like executor_instance.
ALTER TABLE executions_live ADD COLUMN executor_app varchar(190) NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN executor_app varchar(190) NOT NULL DEFAULT '';
UPDATE executions_live SET executor_app = COALESCE((SELECT app FROM jobs WHERE jobs.id = executions_live.job_id), '')
    WHERE executor_address <> '';
UPDATE executions SET executor_app = COALESCE((SELECT app FROM jobs WHERE jobs.id = executions.job_id), '')
    WHERE state = 'lost' AND executor_address <> '';
-- Output lines of the run that never reached the store (the executor gave up sending them),
-- so the run says its output was cut instead of looking complete.
ALTER TABLE executions_live ADD COLUMN output_lost bigint NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN output_lost bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE executions DROP COLUMN output_lost;
ALTER TABLE executions_live DROP COLUMN output_lost;
ALTER TABLE executions DROP COLUMN executor_app;
ALTER TABLE executions_live DROP COLUMN executor_app;
