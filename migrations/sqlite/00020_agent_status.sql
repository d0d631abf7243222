-- Each cluster agent's status, for operators (issue 21): the last report's time, the
-- backend and version it named, how many drift corrections it reported in all, the
-- last errors it reported (with their time), and its latest corrections (the 20 newest
-- per cluster are kept). Removing a cluster removes its agent's status.
-- +goose Up
CREATE TABLE agent_statuses (
    cluster_id  TEXT PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
    backend     TEXT NOT NULL DEFAULT '',
    version     TEXT NOT NULL DEFAULT '',
    reported_at DATETIME NOT NULL,
    reports     INTEGER NOT NULL DEFAULT 0 CHECK (reports >= 0),
    corrections INTEGER NOT NULL DEFAULT 0 CHECK (corrections >= 0),
    errors      TEXT NOT NULL DEFAULT '[]',
    errors_at   DATETIME
);
CREATE TABLE agent_corrections (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id TEXT NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    at         DATETIME NOT NULL,
    team       TEXT NOT NULL DEFAULT '',
    pool       TEXT NOT NULL DEFAULT '',
    object     TEXT NOT NULL,
    was        TEXT NOT NULL DEFAULT '',
    now_value  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX agent_corrections_cluster ON agent_corrections (cluster_id, id);

-- +goose Down
DROP TABLE agent_corrections;
DROP TABLE agent_statuses;
