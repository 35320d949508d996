-- +goose Up
-- Secret job parameters: when params_secret is set, params holds the parameters sealed with
-- AES-256-GCM ("sdl1:<key id>:<base64>", see package secret); they are opened only to hand
-- them to a run. Sealing grows them by a third, past text's 64 KiB for the longest params
-- the API takes, so params becomes mediumtext.
ALTER TABLE jobs ADD COLUMN params_secret boolean NOT NULL DEFAULT false,
    MODIFY params mediumtext NOT NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN params_secret, MODIFY params text NOT NULL;
