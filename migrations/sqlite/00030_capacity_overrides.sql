-- Effective capacity (issue 37 item 2): an operator's override of a pool's capacity,
-- with a reason and an expiry, as for utilization. While it is in force, supply and
-- reserve prices use it instead of the capacity the cluster's agent measured (or,
-- with no measurement, the configured one). capacity_override_log keeps every set
-- and clear, append-only: who, when, what, why and until when.
-- +goose Up
CREATE TABLE pool_capacity_overrides (
    pool_id    TEXT PRIMARY KEY REFERENCES pools (id),
    units      INTEGER NOT NULL CHECK (units >= 0 AND units <= 1000000000000),
    reason     TEXT NOT NULL CHECK (reason <> ''),
    set_by     TEXT NOT NULL,
    set_at     DATETIME NOT NULL,
    expires_at DATETIME NOT NULL
);

CREATE TABLE capacity_override_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    pool_id    TEXT NOT NULL,
    action     TEXT NOT NULL CHECK (action IN ('set', 'clear')),
    units      INTEGER,
    reason     TEXT NOT NULL DEFAULT '',
    by_whom    TEXT NOT NULL,
    expires_at DATETIME,
    at         DATETIME NOT NULL
);
CREATE INDEX capacity_override_log_pool ON capacity_override_log (pool_id, id);

-- +goose Down
DROP TABLE capacity_override_log;
DROP TABLE pool_capacity_overrides;
