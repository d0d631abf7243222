-- Idle capacity over time and per-pool policies (issue 13).
-- idle_history: every HistoryInterval (15 minutes) the scheduled job records each
-- team's contribution, utility and priority in each pool (and the units it lends and
-- borrows at that moment), at the interval's start, so two servers taking the same
-- snapshot insert one row (the primary key; inserts ignore conflicts). Retention:
-- every point for the last 2 days, the hourly points (at minute 0) up to 30 days,
-- the daily points (at 00:00 UTC) up to 400 days, nothing older.
-- idle_pools.policy: a pool's own sharing policy ('' = its cluster's);
-- idle_balances.priority: the team's priority in the pool at the last decision,
-- under the pool's policy.
-- +goose Up
CREATE TABLE idle_history (
    at           TIMESTAMPTZ NOT NULL,
    team_id      TEXT NOT NULL,
    pool_id      TEXT NOT NULL REFERENCES pools (id),
    cluster_id   TEXT NOT NULL REFERENCES clusters (id),
    policy       TEXT NOT NULL,
    contribution DOUBLE PRECISION NOT NULL,
    utility      DOUBLE PRECISION NOT NULL,
    priority     DOUBLE PRECISION NOT NULL,
    lent         DOUBLE PRECISION NOT NULL DEFAULT 0,
    borrowed     DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (team_id, pool_id, at)
);
CREATE INDEX idle_history_at ON idle_history (at);

ALTER TABLE idle_pools ADD COLUMN policy TEXT NOT NULL DEFAULT ''
    CHECK (policy IN ('', 'direct-orig', 'direct-rel', 'direct-simpl', 'fairshare', 'round-robin'));
ALTER TABLE idle_balances ADD COLUMN priority DOUBLE PRECISION NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE idle_balances DROP COLUMN priority;
ALTER TABLE idle_pools DROP COLUMN policy;
DROP TABLE idle_history;
