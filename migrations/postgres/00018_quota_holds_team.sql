-- Quota set aside for a team's live offers, found by team and pool: placing an
-- offer sums it, and placing a bid looks for an offer of the same pool (a team may
-- not buy and sell one pool in one auction).
-- +goose Up
CREATE INDEX quota_holds_team_pool ON quota_holds (team_id, pool_id);

-- +goose Down
DROP INDEX quota_holds_team_pool;
