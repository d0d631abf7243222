-- Teams, the people who act for them, browser sessions and API tokens.
-- +goose Up
CREATE TABLE teams (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    approval_threshold INTEGER NOT NULL DEFAULT 0 CHECK (approval_threshold >= 0),
    created_at         DATETIME NOT NULL
);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL CHECK (role IN ('member', 'owner', 'finance', 'operator')),
    team_id       TEXT REFERENCES teams (id),
    password_hash TEXT NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    disabled_at   DATETIME,
    CHECK ((role IN ('member', 'owner')) = (team_id IS NOT NULL))
);

CREATE TABLE sessions (
    token_hash   TEXT PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash   TEXT NOT NULL UNIQUE,
    user_id      INTEGER REFERENCES users (id),
    name         TEXT NOT NULL DEFAULT '',
    scope        TEXT NOT NULL CHECK (scope IN ('api', 'agent')),
    cluster_id   TEXT,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME,
    CHECK ((scope = 'agent') = (cluster_id IS NOT NULL))
);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE teams;
