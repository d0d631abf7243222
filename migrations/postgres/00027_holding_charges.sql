-- Holding charges (issue 24): an operator may charge teams per unit of a pool's
-- quota they hold, per month; off (0) by default. pool_holding_charges keeps each
-- pool's rate and the first month it applies to; holding_charges records each
-- (pool, team, month) charged, once (its primary key), with the ledger entry that
-- moved the money. Holding charges get their own ledger reason, 'holding'.
-- +goose Up
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_reason_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_reason_check
    CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort', 'holding'));
CREATE TABLE pool_holding_charges (
    pool_id      TEXT PRIMARY KEY REFERENCES pools (id),
    rate         BIGINT NOT NULL CHECK (rate >= 0),
    applies_from TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE TABLE holding_charges (
    pool_id    TEXT NOT NULL REFERENCES pools (id),
    team_id    TEXT NOT NULL REFERENCES teams (id),
    month      TEXT NOT NULL,
    units      BIGINT NOT NULL CHECK (units > 0),
    rate       BIGINT NOT NULL CHECK (rate > 0),
    amount     BIGINT NOT NULL CHECK (amount > 0),
    entry_id   BIGINT NOT NULL REFERENCES ledger_entries (id),
    charged_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pool_id, team_id, month)
);
CREATE INDEX holding_charges_team ON holding_charges (team_id, month);

-- +goose Down
-- Fails (and changes nothing) while a holding charge exists: the old CHECK refuses it.
DROP TABLE holding_charges;
DROP TABLE pool_holding_charges;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_reason_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_reason_check
    CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort'));
