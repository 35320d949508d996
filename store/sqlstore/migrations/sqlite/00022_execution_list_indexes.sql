-- +goose Up
-- A list of one cause other than schedule (manual, retry, recovery, ...) searches the few
-- executions that were not fired by a schedule (by id), instead of filtering the whole history.
-- (A fired-time range already walks executions_fired_idx, whose entries end with the id.)
CREATE INDEX executions_cause_idx ON executions (cause, id) WHERE cause <> 'schedule';
-- The same executions by fired time, for one cause in a time range, which needs no sort.
CREATE INDEX executions_cause_fired_idx ON executions (cause, fired_at, id) WHERE cause <> 'schedule';

-- +goose Down
DROP INDEX executions_cause_fired_idx;
DROP INDEX executions_cause_idx;
