-- API tokens may expire (revocation and last use have columns since 00001); operators
-- list tokens by owner.
-- +goose Up
ALTER TABLE api_tokens ADD COLUMN expires_at TIMESTAMPTZ;
CREATE INDEX api_tokens_user ON api_tokens (user_id);

-- +goose Down
DROP INDEX api_tokens_user;
ALTER TABLE api_tokens DROP COLUMN expires_at;
