-- The audit trail (issue 34): every action that changes money, quota or the market's
-- rules leaves one row here, written in the same transaction as the change: who (a
-- person, a token, the command line), when, from which address, what (an action name
-- and its object) and the values before and after, as JSON. Rows are numbered without
-- gaps (seq) and chained: each row's hash is SHA-256 over its content and the previous
-- row's hash; audit_head holds the last seq and hash, and every append takes its row
-- (FOR UPDATE on PostgreSQL) so concurrent writers queue rather than fork the chain.
-- Triggers refuse UPDATE and DELETE of a trail row; `clearhouse verify` recomputes
-- the chain, so a row edited or deleted around the triggers is found too.
-- No schema_compat row: a release without the trail would change the market and
-- leave no record, so older releases refuse this schema (docs/audit.md).
-- +goose Up
CREATE TABLE audit (
    seq            INTEGER PRIMARY KEY,
    at             DATETIME NOT NULL,
    actor          TEXT NOT NULL,
    actor_user_id  BIGINT,
    actor_token_id BIGINT,
    address        TEXT NOT NULL DEFAULT '',
    action         TEXT NOT NULL CHECK (action <> ''),
    object         TEXT NOT NULL DEFAULT '',
    before_json    TEXT NOT NULL DEFAULT '',
    after_json     TEXT NOT NULL DEFAULT '',
    prev_hash      TEXT NOT NULL,
    hash           TEXT NOT NULL
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_action ON audit (action, seq);
CREATE INDEX audit_object ON audit (object, seq);

CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');

-- +goose StatementBegin
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit trail is append-only');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit trail is append-only');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_no_delete;
DROP TRIGGER audit_no_update;
DROP TABLE audit_head;
DROP TABLE audit;
