-- Work running beyond a team's limit (issue 37): each team and pool an agent reports
-- over its limit now, since when and by how much (a report that no longer lists it
-- clears it); the operators' policy for it (one row; none: report only, 10 minutes
-- grace); and what agents took back, each object stopped.
-- +goose Up
CREATE TABLE over_limits (
    team_id     TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    pool_id     TEXT NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
    cluster_id  TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    used        INTEGER NOT NULL CHECK (used >= 0),
    limit_units INTEGER NOT NULL CHECK (limit_units >= 0),
    since       DATETIME NOT NULL,
    reported_at DATETIME NOT NULL,
    PRIMARY KEY (team_id, pool_id)
);
CREATE INDEX over_limits_cluster ON over_limits (cluster_id);
CREATE TABLE over_limit_policies (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    action        TEXT NOT NULL CHECK (action IN ('report', 'evict')),
    grace_seconds INTEGER NOT NULL CHECK (grace_seconds >= 0),
    updated_at    DATETIME NOT NULL
);
CREATE TABLE over_limit_reclaims (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    team_id    TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    pool_id    TEXT NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
    object     TEXT NOT NULL,
    units      INTEGER NOT NULL CHECK (units >= 0),
    at         DATETIME NOT NULL
);
CREATE INDEX over_limit_reclaims_team ON over_limit_reclaims (team_id, id);

-- +goose Down
DROP TABLE over_limit_reclaims;
DROP TABLE over_limit_policies;
DROP TABLE over_limits;
