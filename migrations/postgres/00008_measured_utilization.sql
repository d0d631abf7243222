-- Measured utilization (issue 12, Stokely et al. section IV): each pool's usage over
-- time at slot resolution (raw samples kept 14 days), hourly aggregates (kept a
-- year), each pool's percentile setting, measured psi and operator override, the
-- utilization job's progress, and every settled trade's pool utilization.
-- +goose Up
CREATE TABLE usage_samples (
    pool_id  TEXT NOT NULL REFERENCES pools (id),
    slot_at  TIMESTAMPTZ NOT NULL,
    used     BIGINT NOT NULL CHECK (used >= 0),
    capacity BIGINT NOT NULL CHECK (capacity >= 0),
    source   TEXT NOT NULL CHECK (source IN ('agent', 'plan')),
    PRIMARY KEY (pool_id, slot_at)
);
CREATE INDEX usage_samples_slot ON usage_samples (slot_at);

CREATE TABLE usage_hourly (
    pool_id    TEXT NOT NULL REFERENCES pools (id),
    hour_at    TIMESTAMPTZ NOT NULL,
    samples    BIGINT NOT NULL CHECK (samples > 0),
    mean_ratio DOUBLE PRECISION NOT NULL CHECK (mean_ratio >= 0 AND mean_ratio <= 1),
    max_ratio  DOUBLE PRECISION NOT NULL CHECK (max_ratio >= 0 AND max_ratio <= 1),
    PRIMARY KEY (pool_id, hour_at)
);
CREATE INDEX usage_hourly_hour ON usage_hourly (hour_at);

CREATE TABLE pool_utilization (
    pool_id          TEXT PRIMARY KEY REFERENCES pools (id),
    percentile       BIGINT NOT NULL DEFAULT 95 CHECK (percentile IN (50, 90, 95, 99)),
    window_days      BIGINT NOT NULL DEFAULT 7 CHECK (window_days >= 1 AND window_days <= 14),
    measured         DOUBLE PRECISION CHECK (measured >= 0 AND measured <= 1),
    samples          BIGINT NOT NULL DEFAULT 0 CHECK (samples >= 0),
    measured_at      TIMESTAMPTZ,
    override         DOUBLE PRECISION CHECK (override >= 0 AND override <= 1),
    override_reason  TEXT NOT NULL DEFAULT '',
    override_by      TEXT NOT NULL DEFAULT '',
    override_expires TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ NOT NULL,
    CHECK ((override IS NULL) = (override_expires IS NULL))
);

CREATE TABLE usage_job (
    id           BIGINT PRIMARY KEY CHECK (id = 1),
    filled_until TIMESTAMPTZ,
    refreshed_at TIMESTAMPTZ
);
INSERT INTO usage_job (id) VALUES (1);

CREATE TABLE trade_utilization (
    auction_id  BIGINT NOT NULL REFERENCES auctions (id),
    order_id    BIGINT NOT NULL REFERENCES orders (id),
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    resource    TEXT NOT NULL,
    side        TEXT NOT NULL CHECK (side IN ('bid', 'offer')),
    utilization DOUBLE PRECISION NOT NULL CHECK (utilization >= 0 AND utilization <= 1),
    PRIMARY KEY (auction_id, order_id, pool_id)
);
CREATE INDEX trade_utilization_resource ON trade_utilization (resource, side);

-- +goose Down
DROP TABLE trade_utilization;
DROP TABLE usage_job;
DROP TABLE pool_utilization;
DROP TABLE usage_hourly;
DROP TABLE usage_samples;
