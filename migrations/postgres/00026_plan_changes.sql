-- What each write to the reservation plan did to it (issue 25): one row per plan
-- version a reservation write made, with the engine operations it applied, so the
-- other servers replay them instead of rebuilding the plan. A version with no row
-- (a settlement, an offer, a quota grant) makes them rebuild. The plan's tick keeps
-- the newest rows only.
-- +goose Up
CREATE TABLE plan_changes (
    version    BIGINT PRIMARY KEY,
    body       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE plan_changes;
