-- +goose Up
-- An alarm claimed for delivery (alarm_state 'sending') carries the database time of its
-- claim, so one left sending by a node that died mid-delivery is found and sent again
-- (ExecutionsAlarmReclaim).
ALTER TABLE executions
    ADD COLUMN alarm_claimed_at bigint NOT NULL DEFAULT 0,
    ADD KEY executions_alarm_sending_idx (alarm_state, alarm_claimed_at);

-- +goose Down
ALTER TABLE executions
    DROP INDEX executions_alarm_sending_idx,
    DROP COLUMN alarm_claimed_at;
