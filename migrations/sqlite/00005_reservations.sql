-- Short-term reservations (DESIGN.md, "Reservations for short-term jobs"): each
-- pool's pricing policy, the plan's version (bumped by every write that changes what
-- the scheduler must plan around, so each server rebuilds its in-memory plan when
-- another wrote), reservations with their requests and charges, and the capacity
-- changes cluster agents report.
-- +goose Up
CREATE TABLE pool_policies (
    pool_id    TEXT PRIMARY KEY REFERENCES pools (id),
    algorithm  TEXT NOT NULL CHECK (algorithm IN ('econ', 'greedy', 'ondemand')),
    predictor  TEXT NOT NULL CHECK (predictor IN ('seasonal', 'fractional', 'load')),
    unit_price INTEGER NOT NULL CHECK (unit_price >= 0),
    updated_at DATETIME NOT NULL
);

CREATE TABLE plan_state (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO plan_state (id, version) VALUES (1, 0);

CREATE TABLE reservations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id    TEXT NOT NULL REFERENCES teams (id),
    created_by INTEGER REFERENCES users (id),
    status     TEXT NOT NULL CHECK (status IN ('new', 'rejected', 'accepted', 'done', 'cancelled', 'failed')),
    cluster_id TEXT REFERENCES clusters (id),
    value      INTEGER CHECK (value > 0),
    price      INTEGER NOT NULL DEFAULT 0 CHECK (price >= 0),
    hold_id    INTEGER REFERENCES ledger_holds (id),
    captured   INTEGER NOT NULL DEFAULT 0 CHECK (captured >= 0),
    released   INTEGER NOT NULL DEFAULT 0 CHECK (released >= 0),
    digest     TEXT NOT NULL DEFAULT '',
    note       TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL,
    CHECK (captured + released <= price)
);
CREATE INDEX reservations_team ON reservations (team_id, status);
CREATE INDEX reservations_status ON reservations (status, cluster_id);

CREATE TABLE reservation_requests (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id),
    idx            INTEGER NOT NULL CHECK (idx >= 0),
    configuration  TEXT NOT NULL,
    count          INTEGER NOT NULL CHECK (count > 0),
    duration       INTEGER NOT NULL CHECK (duration > 0),
    arrival        DATETIME NOT NULL,
    deadline       DATETIME NOT NULL,
    start_at       DATETIME,
    ended_at       DATETIME,
    charge         INTEGER NOT NULL DEFAULT 0 CHECK (charge >= 0),
    usage          TEXT,
    waiting_tasks  INTEGER,
    reported_at    DATETIME,
    PRIMARY KEY (reservation_id, idx),
    CHECK (deadline > arrival)
);

CREATE TABLE capacity_changes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    from_at     DATETIME NOT NULL,
    to_at       DATETIME NOT NULL,
    units       INTEGER NOT NULL CHECK (units >= 0),
    reported_at DATETIME NOT NULL,
    CHECK (to_at > from_at)
);
CREATE INDEX capacity_changes_pool ON capacity_changes (to_at, id);

-- +goose Down
DROP TABLE capacity_changes;
DROP TABLE reservation_requests;
DROP TABLE reservations;
DROP TABLE plan_state;
DROP TABLE pool_policies;
