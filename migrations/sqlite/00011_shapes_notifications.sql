-- Trading experience (issue 15): service shapes operators define ("storage server =
-- 4 cores, 16 GiB, 2 TiB") that bid entry and search turn into covering bundles;
-- in-app notifications (a settled auction's outcome, an order waiting for approval),
-- one per user, kind and reference so a repeated settlement adds none; and the
-- email outbox a job sends from, so settlement never waits on a mail server.
-- +goose Up
CREATE TABLE service_shapes (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL
);

CREATE TABLE service_shape_items (
    shape_id TEXT NOT NULL REFERENCES service_shapes (id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (shape_id, resource)
);

CREATE TABLE notifications (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    ref        TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    link       TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    read_at    DATETIME,
    UNIQUE (user_id, kind, ref)
);
CREATE INDEX notifications_unread ON notifications (user_id, read_at);

CREATE TABLE email_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    notification_id INTEGER NOT NULL UNIQUE REFERENCES notifications (id) ON DELETE CASCADE,
    to_addr         TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    next_attempt_at DATETIME NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    sent_at         DATETIME
);
CREATE INDEX email_outbox_due ON email_outbox (sent_at, next_attempt_at);

-- +goose Down
DROP TABLE email_outbox;
DROP TABLE notifications;
DROP TABLE service_shape_items;
DROP TABLE service_shapes;
