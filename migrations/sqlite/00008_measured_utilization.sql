-- Measured utilization (issue 12, Stokely et al. section IV): each pool's usage over
-- time at slot resolution (raw samples kept 14 days), hourly aggregates (kept a
-- year), each pool's percentile setting, measured psi and operator override, the
-- utilization job's progress, and every settled trade's pool utilization.
-- +goose Up
CREATE TABLE usage_samples (
    pool_id  TEXT NOT NULL REFERENCES pools (id),
    slot_at  DATETIME NOT NULL,
    used     INTEGER NOT NULL CHECK (used >= 0),
    capacity INTEGER NOT NULL CHECK (capacity >= 0),
    source   TEXT NOT NULL CHECK (source IN ('agent', 'plan')),
    PRIMARY KEY (pool_id, slot_at)
) WITHOUT ROWID; -- kept in pool and time order: the job reads one pool's window at a time
CREATE INDEX usage_samples_slot ON usage_samples (slot_at);

CREATE TABLE usage_hourly (
    pool_id    TEXT NOT NULL REFERENCES pools (id),
    hour_at    DATETIME NOT NULL,
    samples    INTEGER NOT NULL CHECK (samples > 0),
    mean_ratio REAL NOT NULL CHECK (mean_ratio >= 0 AND mean_ratio <= 1),
    max_ratio  REAL NOT NULL CHECK (max_ratio >= 0 AND max_ratio <= 1),
    PRIMARY KEY (pool_id, hour_at)
) WITHOUT ROWID;
CREATE INDEX usage_hourly_hour ON usage_hourly (hour_at);

CREATE TABLE pool_utilization (
    pool_id          TEXT PRIMARY KEY REFERENCES pools (id),
    percentile       INTEGER NOT NULL DEFAULT 95 CHECK (percentile IN (50, 90, 95, 99)),
    window_days      INTEGER NOT NULL DEFAULT 7 CHECK (window_days >= 1 AND window_days <= 14),
    measured         REAL CHECK (measured >= 0 AND measured <= 1),
    samples          INTEGER NOT NULL DEFAULT 0 CHECK (samples >= 0),
    measured_at      DATETIME,
    override         REAL CHECK (override >= 0 AND override <= 1),
    override_reason  TEXT NOT NULL DEFAULT '',
    override_by      TEXT NOT NULL DEFAULT '',
    override_expires DATETIME,
    updated_at       DATETIME NOT NULL,
    CHECK ((override IS NULL) = (override_expires IS NULL))
);

CREATE TABLE usage_job (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    filled_until DATETIME,
    refreshed_at DATETIME
);
INSERT INTO usage_job (id) VALUES (1);

CREATE TABLE trade_utilization (
    auction_id  INTEGER NOT NULL REFERENCES auctions (id),
    order_id    INTEGER NOT NULL REFERENCES orders (id),
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    resource    TEXT NOT NULL,
    side        TEXT NOT NULL CHECK (side IN ('bid', 'offer')),
    utilization REAL NOT NULL CHECK (utilization >= 0 AND utilization <= 1),
    PRIMARY KEY (auction_id, order_id, pool_id)
);
CREATE INDEX trade_utilization_resource ON trade_utilization (resource, side);

-- +goose Down
DROP TABLE trade_utilization;
DROP TABLE usage_job;
DROP TABLE pool_utilization;
DROP TABLE usage_hourly;
DROP TABLE usage_samples;
