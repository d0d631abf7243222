-- Owners' own usage over time, so the fairness report can replay it (issue 13).
-- idle_usage.unit_seconds: the integral of the units each agent report gave, from the
-- row's first report to reported_at (each report adds the previous units times the
-- time since the previous report). idle_usage_history: every HistoryInterval the
-- history job copies each idle_usage row, its integral carried to read_at, stamped
-- with the interval's start (one row per interval through the primary key). The mean
-- usage between two points is the difference of their integrals over the time between
-- their reads, so thinning (the idle_history retention rule) keeps means exact.
-- +goose Up
ALTER TABLE idle_usage ADD COLUMN unit_seconds DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE TABLE idle_usage_history (
    at           TIMESTAMPTZ NOT NULL,
    pool_id      TEXT NOT NULL REFERENCES pools (id),
    team_id      TEXT NOT NULL REFERENCES teams (id),
    cluster_id   TEXT NOT NULL REFERENCES clusters (id),
    units        BIGINT NOT NULL CHECK (units >= 0),
    unit_seconds DOUBLE PRECISION NOT NULL CHECK (unit_seconds >= 0),
    read_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pool_id, team_id, at)
);
CREATE INDEX idle_usage_history_at ON idle_usage_history (at);

-- +goose Down
DROP TABLE idle_usage_history;
ALTER TABLE idle_usage DROP COLUMN unit_seconds;
