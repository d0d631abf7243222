-- Holding charges (issue 24): an operator may charge teams per unit of a pool's
-- quota they hold, per month; off (0) by default. pool_holding_charges keeps each
-- pool's rate and the first month it applies to; holding_charges records each
-- (pool, team, month) charged, once (its primary key), with the ledger entry that
-- moved the money. Holding charges get their own ledger reason, 'holding'.
--
-- SQLite cannot change a CHECK in place, so ledger_entries is rebuilt as migration
-- 00014 did (its comment says why each step is there).
-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE ledger_entries_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort', 'holding')),
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
CREATE TABLE pool_holding_charges (
    pool_id      TEXT PRIMARY KEY REFERENCES pools (id),
    rate         INTEGER NOT NULL CHECK (rate >= 0),
    applies_from DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE TABLE holding_charges (
    pool_id    TEXT NOT NULL REFERENCES pools (id),
    team_id    TEXT NOT NULL REFERENCES teams (id),
    month      TEXT NOT NULL,
    units      INTEGER NOT NULL CHECK (units > 0),
    rate       INTEGER NOT NULL CHECK (rate > 0),
    amount     INTEGER NOT NULL CHECK (amount > 0),
    entry_id   INTEGER NOT NULL REFERENCES ledger_entries (id),
    charged_at DATETIME NOT NULL,
    PRIMARY KEY (pool_id, team_id, month)
);
CREATE INDEX holding_charges_team ON holding_charges (team_id, month);
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- Fails, before changing anything, while a holding charge exists.
CREATE TEMP TABLE holding_entries (n INTEGER CHECK (n = 0));
INSERT INTO holding_entries SELECT count(*) FROM ledger_entries WHERE reason = 'holding';
DROP TABLE holding_entries;
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
DROP TABLE holding_charges;
DROP TABLE pool_holding_charges;
CREATE TABLE ledger_entries_old (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort')),
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
