-- Draft orders (issue 15): a team prepares bids, offers and trades while no auction
-- takes bids, and places them with the normal checks and holds once one opens. A
-- draft holds nothing; its order is kept as JSON (bundles and limits), as the
-- order form would submit it.
-- +goose Up
CREATE TABLE order_drafts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id    TEXT NOT NULL REFERENCES teams (id),
    created_by INTEGER NOT NULL REFERENCES users (id),
    spec       TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);
CREATE INDEX order_drafts_team ON order_drafts (team_id, id);

-- +goose Down
DROP TABLE order_drafts;
