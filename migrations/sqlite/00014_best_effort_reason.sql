-- Best-effort charges get their own ledger reason (issue 14): an abacus job's budget,
-- captured when the job is done, was posted with reason 'reservation' because the
-- reasons are a CHECK of ledger_entries. Entries posted before keep their reason (the
-- journal is append-only); pages recognise them by their reference, best-effort:N.
--
-- SQLite cannot change a CHECK in place, so the table is rebuilt by the procedure of
-- https://www.sqlite.org/lang_altertable.html#otheralter: foreign keys off (outside a
-- transaction, hence NO TRANSACTION; the writer has one connection, so every
-- statement below runs on it), copy every row with its id, keep the AUTOINCREMENT
-- sequence, drop the old table, rename the new one (the references of
-- ledger_postings, ledger_holds and ledger_hold_parts name the table, so they follow),
-- recreate its index, and check the foreign keys before committing. The table has no
-- triggers and no views use it.
-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE ledger_entries_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort')),
    ref         TEXT NOT NULL DEFAULT '',
    memo        TEXT NOT NULL DEFAULT '',
    reverses    INTEGER UNIQUE REFERENCES ledger_entries (id),
    posted_at   DATETIME NOT NULL
);
INSERT INTO ledger_entries_new (id, idem_key, fingerprint, reason, ref, memo, reverses, posted_at)
    SELECT id, idem_key, fingerprint, reason, ref, memo, reverses, posted_at FROM ledger_entries ORDER BY id;
UPDATE sqlite_sequence SET seq = max(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'ledger_entries'), 0))
    WHERE name = 'ledger_entries_new';
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;
CREATE INDEX ledger_entries_posted ON ledger_entries (posted_at, id);
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- Fails, before changing anything, while a best-effort entry exists.
CREATE TEMP TABLE best_effort_entries (n INTEGER CHECK (n = 0));
INSERT INTO best_effort_entries SELECT count(*) FROM ledger_entries WHERE reason = 'best-effort';
DROP TABLE best_effort_entries;
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE ledger_entries_old (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment')),
    ref         TEXT NOT NULL DEFAULT '',
    memo        TEXT NOT NULL DEFAULT '',
    reverses    INTEGER UNIQUE REFERENCES ledger_entries (id),
    posted_at   DATETIME NOT NULL
);
INSERT INTO ledger_entries_old (id, idem_key, fingerprint, reason, ref, memo, reverses, posted_at)
    SELECT id, idem_key, fingerprint, reason, ref, memo, reverses, posted_at FROM ledger_entries ORDER BY id;
UPDATE sqlite_sequence SET seq = max(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'ledger_entries'), 0))
    WHERE name = 'ledger_entries_old';
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_old RENAME TO ledger_entries;
CREATE INDEX ledger_entries_posted ON ledger_entries (posted_at, id);
COMMIT;
PRAGMA foreign_keys = ON;
