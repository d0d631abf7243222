-- Partial settlement of holds: a hold's amount is captured and released in parts
-- over time (a short-term reservation's slots), each part recorded once under its
-- idempotency key. A hold's remaining amount is amount - captured - released.
-- +goose Up
ALTER TABLE ledger_holds ADD COLUMN released INTEGER NOT NULL DEFAULT 0 CHECK (released >= 0 AND captured + released <= amount);

CREATE TABLE ledger_hold_parts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    hold_id     INTEGER NOT NULL REFERENCES ledger_holds (id),
    idem_key    TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    captured    INTEGER NOT NULL CHECK (captured >= 0),
    released    INTEGER NOT NULL CHECK (released >= 0),
    entry_id    INTEGER REFERENCES ledger_entries (id),
    created_at  DATETIME NOT NULL,
    CHECK (captured + released > 0),
    -- A part posts an entry exactly when it captures something.
    CHECK ((captured > 0) = (entry_id IS NOT NULL))
);
CREATE INDEX ledger_hold_parts_hold ON ledger_hold_parts (hold_id, id);

-- +goose Down
DROP TABLE ledger_hold_parts;
ALTER TABLE ledger_holds DROP COLUMN released;
