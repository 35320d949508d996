-- +goose Up
-- Secret job parameters: when params_secret is set, params holds the parameters sealed with
-- AES-256-GCM ("sdl1:<key id>:<base64>", see package secret); they are opened only to hand
-- them to a run. Sealing grows them by a third, past text's 64 KiB for the longest params
-- the API takes, so params becomes mediumtext.
ALTER TABLE jobs ADD COLUMN params_secret boolean NOT NULL DEFAULT false,
    MODIFY params mediumtext NOT NULL;

-- Single sign-on: a user made by an OpenID Connect login is tied to the identity provider's
-- subject ("issuer|sub"), so another identity of the same user name cannot take it over;
-- '' for local users.
ALTER TABLE users ADD COLUMN sso_subject varchar(255) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE users DROP COLUMN sso_subject;
ALTER TABLE jobs DROP COLUMN params_secret, MODIFY params text NOT NULL;
