-- Idle capacity (DESIGN.md, "Idle capacity"; issues 13 and 14): best-effort jobs of
-- identical tasks run on quota its owner is not using and on capacity the operator has
-- neither sold nor reserved. Per cluster: the sharing policy, Abacus's alpha, the
-- accounts' clock and round robin's sequence (its row is also the lock every write to
-- the cluster's best-effort state takes first), the last auction and when its agent
-- last reported. Per pool: minimum runtime and exposure threshold. Owners' own usage
-- as agents report it. Contribution and utility per team and pool, summarized as the
-- sharing engine keeps them (six numbers, not the history). Jobs with task counts
-- (and, under the abacus policy, a budget held in the ledger), one row per run of a
-- task, and the fairness reports the scheduled job computes.
-- +goose Up
CREATE TABLE idle_clusters (
    cluster_id    TEXT PRIMARY KEY REFERENCES clusters (id),
    policy        TEXT NOT NULL CHECK (policy IN ('direct-orig', 'direct-rel', 'direct-simpl', 'fairshare', 'round-robin', 'abacus')),
    alpha         REAL NOT NULL CHECK (alpha >= 0 AND alpha <= 1),
    as_of         DATETIME NOT NULL,
    seq           INTEGER NOT NULL DEFAULT 0 CHECK (seq >= 0),
    decisions     INTEGER NOT NULL DEFAULT 0 CHECK (decisions >= 0),
    agent_seen_at DATETIME,
    auction       TEXT NOT NULL DEFAULT '',
    updated_at    DATETIME NOT NULL
);

CREATE TABLE idle_pools (
    pool_id     TEXT PRIMARY KEY REFERENCES pools (id),
    min_runtime INTEGER NOT NULL CHECK (min_runtime >= 0),
    exposure    REAL NOT NULL CHECK (exposure >= 0 AND exposure < 1),
    updated_at  DATETIME NOT NULL
);

CREATE TABLE idle_usage (
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    team_id     TEXT NOT NULL REFERENCES teams (id),
    units       INTEGER NOT NULL CHECK (units >= 0),
    reported_at DATETIME NOT NULL,
    PRIMARY KEY (pool_id, team_id)
);

CREATE TABLE idle_balances (
    cluster_id   TEXT NOT NULL REFERENCES clusters (id),
    team_id      TEXT NOT NULL,
    pool_id      TEXT NOT NULL REFERENCES pools (id),
    surface      REAL NOT NULL DEFAULT 0,
    orig         REAL NOT NULL DEFAULT 0,
    rel          REAL NOT NULL DEFAULT 0,
    lent_surface REAL NOT NULL DEFAULT 0,
    lent_orig    REAL NOT NULL DEFAULT 0,
    lent_rel     REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (team_id, pool_id)
);
CREATE INDEX idle_balances_cluster ON idle_balances (cluster_id);

CREATE TABLE idle_teams (
    cluster_id TEXT NOT NULL REFERENCES clusters (id),
    team_id    TEXT NOT NULL,
    served     INTEGER NOT NULL DEFAULT 0 CHECK (served >= 0),
    priority   REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (cluster_id, team_id)
);

CREATE TABLE best_effort_jobs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id           TEXT NOT NULL REFERENCES teams (id),
    cluster_id        TEXT NOT NULL REFERENCES clusters (id),
    created_by        INTEGER REFERENCES users (id),
    configuration     TEXT NOT NULL,
    tasks             INTEGER NOT NULL CHECK (tasks > 0),
    max_task_duration INTEGER NOT NULL DEFAULT 0 CHECK (max_task_duration >= 0),
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'cancelled')),
    queued            INTEGER NOT NULL CHECK (queued >= 0),
    running           INTEGER NOT NULL DEFAULT 0 CHECK (running >= 0),
    done              INTEGER NOT NULL DEFAULT 0 CHECK (done >= 0),
    failed            INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),
    cancelled         INTEGER NOT NULL DEFAULT 0 CHECK (cancelled >= 0),
    preempted         INTEGER NOT NULL DEFAULT 0 CHECK (preempted >= 0),
    idem_key          TEXT UNIQUE,
    digest            TEXT NOT NULL,
    budget            INTEGER NOT NULL DEFAULT 0 CHECK (budget >= 0),
    utility           TEXT NOT NULL DEFAULT '' CHECK (utility IN ('', 'linear', 'log')),
    weights           TEXT NOT NULL DEFAULT '',
    shares            TEXT NOT NULL DEFAULT '',
    hold_id           INTEGER REFERENCES ledger_holds (id),
    captured          INTEGER NOT NULL DEFAULT 0 CHECK (captured >= 0),
    released          INTEGER NOT NULL DEFAULT 0 CHECK (released >= 0),
    enqueued_at       DATETIME NOT NULL,
    created_at        DATETIME NOT NULL,
    updated_at        DATETIME NOT NULL,
    ended_at          DATETIME,
    CHECK (queued + running + done + failed + cancelled = tasks),
    CHECK (captured + released <= budget)
);
CREATE INDEX best_effort_jobs_cluster ON best_effort_jobs (cluster_id, status);
CREATE INDEX best_effort_jobs_team ON best_effort_jobs (team_id, id);

CREATE TABLE best_effort_tasks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id        INTEGER NOT NULL REFERENCES best_effort_jobs (id),
    cluster_id    TEXT NOT NULL REFERENCES clusters (id),
    team_id       TEXT NOT NULL REFERENCES teams (id),
    status        TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'preempted', 'requeued', 'cancelled')),
    lenders       TEXT NOT NULL,
    reason        TEXT NOT NULL DEFAULT '',
    started_at    DATETIME NOT NULL,
    confirmed_at  DATETIME,
    ended_at      DATETIME,
    stop_acked_at DATETIME,
    CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX best_effort_tasks_cluster ON best_effort_tasks (cluster_id, status);
CREATE INDEX best_effort_tasks_job ON best_effort_tasks (job_id, id);

CREATE TABLE idle_fairness (
    cluster_id  TEXT NOT NULL REFERENCES clusters (id),
    span        TEXT NOT NULL CHECK (span IN ('day', 'week')),
    computed_at DATETIME NOT NULL,
    report      TEXT NOT NULL,
    PRIMARY KEY (cluster_id, span)
);

-- +goose Down
DROP TABLE idle_fairness;
DROP TABLE best_effort_tasks;
DROP TABLE best_effort_jobs;
DROP TABLE idle_teams;
DROP TABLE idle_balances;
DROP TABLE idle_usage;
DROP TABLE idle_pools;
DROP TABLE idle_clusters;
