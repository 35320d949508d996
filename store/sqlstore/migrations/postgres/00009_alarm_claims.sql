-- +goose Up
-- An alarm claimed for delivery (alarm_state 'sending') carries the database time of its
-- claim, so one left sending by a node that died mid-delivery is found and sent again
-- (ExecutionsAlarmReclaim).
ALTER TABLE executions ADD COLUMN alarm_claimed_at bigint NOT NULL DEFAULT 0;
CREATE INDEX executions_alarm_sending_idx ON executions (alarm_claimed_at) WHERE alarm_state = 'sending';

-- +goose Down
DROP INDEX executions_alarm_sending_idx;
ALTER TABLE executions DROP COLUMN alarm_claimed_at;
