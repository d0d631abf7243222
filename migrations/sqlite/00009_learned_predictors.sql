-- The reservation scheduler learns in the database (issue 12, "The reservation
-- scheduler"): the learned predictors' state as of an observation (a snapshot, one
-- row), the observations made since (each decided bid and what each reservation
-- used, in the order they were made), so every server replays the same log and
-- quotes the same prices and a restart forgets nothing; the value the plan could not
-- serve (refused or not honoured), per pool; when a reservation was decided, its
-- bid language, and per request the overhead it reserves above its configuration
-- and the unit-slots it reported unused.
-- +goose Up
CREATE TABLE predictor_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    upto       INTEGER NOT NULL CHECK (upto >= 0),
    state      TEXT NOT NULL DEFAULT '',
    updated_at DATETIME NOT NULL
);
INSERT INTO predictor_state (id, upto, state, updated_at) VALUES (1, 0, '', CURRENT_TIMESTAMP);

CREATE TABLE predictor_observations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('demand', 'use')),
    body       TEXT NOT NULL,
    created_at DATETIME NOT NULL
);

CREATE TABLE lost_value (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    reservation_id INTEGER REFERENCES reservations (id),
    team_id        TEXT NOT NULL,
    pool_id        TEXT NOT NULL REFERENCES pools (id),
    at             DATETIME NOT NULL,
    value          INTEGER NOT NULL CHECK (value >= 0),
    reason         TEXT NOT NULL CHECK (reason IN ('no-room', 'priced-out', 'not-honoured')),
    created_at     DATETIME NOT NULL
);
CREATE INDEX lost_value_at ON lost_value (at, pool_id);

ALTER TABLE reservations ADD COLUMN decided_at DATETIME;
ALTER TABLE reservations ADD COLUMN language TEXT NOT NULL DEFAULT 'ALL'
    CHECK (language IN ('ALL', 'ANY', 'ORDER', 'ORDER_NO_GAP'));
ALTER TABLE reservation_requests ADD COLUMN overhead TEXT;
ALTER TABLE reservation_requests ADD COLUMN unused INTEGER NOT NULL DEFAULT 0 CHECK (unused >= 0);

-- +goose Down
ALTER TABLE reservation_requests DROP COLUMN unused;
ALTER TABLE reservation_requests DROP COLUMN overhead;
ALTER TABLE reservations DROP COLUMN language;
ALTER TABLE reservations DROP COLUMN decided_at;
DROP TABLE lost_value;
DROP TABLE predictor_observations;
DROP TABLE predictor_state;
