-- +goose Up
-- A list of executions in a fired-time range walks (fired_at, id) from the range's end instead
-- of every id above it: the BRIN index found the range's pages but not its order. It also
-- serves the retention sweep, which deletes by fired_at, oldest first.
DROP INDEX executions_fired_idx;
CREATE INDEX executions_fired_idx ON executions (fired_at, id);
-- A list of one cause other than schedule (manual, retry, recovery, ...) searches the few
-- executions that were not fired by a schedule (by id), instead of filtering the whole history.
CREATE INDEX executions_cause_idx ON executions (cause, id) WHERE cause <> 'schedule';
-- The same executions by fired time, for one cause in a time range, which needs no sort.
CREATE INDEX executions_cause_fired_idx ON executions (cause, fired_at, id) WHERE cause <> 'schedule';

-- +goose Down
DROP INDEX executions_cause_fired_idx;
DROP INDEX executions_cause_idx;
DROP INDEX executions_fired_idx;
CREATE INDEX executions_fired_idx ON executions USING brin (fired_at);
