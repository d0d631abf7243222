-- The double-entry budget ledger: accounts, append-only journal entries with their
-- postings, and holds on team budgets.
-- +goose Up
CREATE TABLE ledger_accounts (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('team', 'treasury', 'grants')),
    balance    INTEGER NOT NULL DEFAULT 0,
    held       INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
    created_at DATETIME NOT NULL,
    -- A team's available balance (posted minus active holds) never goes below zero,
    -- whatever the interleaving of writers.
    CHECK (kind <> 'team' OR balance - held >= 0)
);

CREATE TABLE ledger_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment')),
    ref         TEXT NOT NULL DEFAULT '',
    memo        TEXT NOT NULL DEFAULT '',
    reverses    INTEGER UNIQUE REFERENCES ledger_entries (id),
    posted_at   DATETIME NOT NULL
);
CREATE INDEX ledger_entries_posted ON ledger_entries (posted_at, id);

CREATE TABLE ledger_postings (
    entry_id   INTEGER NOT NULL REFERENCES ledger_entries (id),
    account_id TEXT NOT NULL REFERENCES ledger_accounts (id),
    amount     INTEGER NOT NULL CHECK (amount <> 0),
    PRIMARY KEY (entry_id, account_id)
);
CREATE INDEX ledger_postings_account ON ledger_postings (account_id, entry_id);

CREATE TABLE ledger_holds (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    idem_key     TEXT NOT NULL UNIQUE,
    account_id   TEXT NOT NULL REFERENCES ledger_accounts (id),
    amount       INTEGER NOT NULL CHECK (amount > 0),
    ref          TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL CHECK (status IN ('active', 'captured', 'released')),
    captured     INTEGER NOT NULL DEFAULT 0 CHECK (captured >= 0 AND captured <= amount),
    entry_id     INTEGER REFERENCES ledger_entries (id),
    resolve_key  TEXT UNIQUE,
    created_at   DATETIME NOT NULL,
    resolved_at  DATETIME
);
CREATE INDEX ledger_holds_account ON ledger_holds (account_id, status);

-- +goose Down
DROP TABLE ledger_holds;
DROP TABLE ledger_postings;
DROP TABLE ledger_entries;
DROP TABLE ledger_accounts;
