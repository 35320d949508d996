-- +goose Up
-- XXL-JOB executors: an app's protocol generation and access token, and a registry row's own
-- silence threshold (XXL-JOB executors beat every 30 s, not at the server's interval).

-- The app's protocol is 'sundial' (called 'native' before) or 'xxl-job'; for xxl-job, the
-- generation: 2.x, 3.3 or 3.5.
UPDATE apps SET protocol = 'sundial' WHERE protocol = 'native';
ALTER TABLE apps ADD COLUMN protocol_version varchar(8) NOT NULL DEFAULT '';
-- The access token of an xxl-job app. Its SHA-256 checks what executors present; the token
-- itself must also be kept, since Sundial presents it to the executors (they check it too):
-- sealed with the server's --secret-key (AES-256-GCM), never in the clear.
ALTER TABLE apps ADD COLUMN xxl_token_hash varchar(64) NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN xxl_token_sealed varchar(1024) NOT NULL DEFAULT '';
-- How long the instance may stay silent before it is gone; 0: the server's own threshold.
ALTER TABLE registry ADD COLUMN live_ms bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE registry DROP COLUMN live_ms;
ALTER TABLE apps DROP COLUMN xxl_token_sealed;
ALTER TABLE apps DROP COLUMN xxl_token_hash;
ALTER TABLE apps DROP COLUMN protocol_version;
UPDATE apps SET protocol = 'native' WHERE protocol = 'sundial';
