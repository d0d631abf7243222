-- Email opt-out (issue 15): a user who turns notification emails off still gets
-- every notification in the app; the outbox queues no email for them, and an
-- email queued before they turned it off is dropped (kept, with when), not sent.
-- +goose Up
ALTER TABLE users ADD COLUMN email_off_at TIMESTAMPTZ;
ALTER TABLE email_outbox ADD COLUMN dropped_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE email_outbox DROP COLUMN dropped_at;
ALTER TABLE users DROP COLUMN email_off_at;
