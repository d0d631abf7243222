-- Market integrity (issue 11): operators' limits on what one team may enter in one
-- auction; idempotency keys scoped to the team that used them (stored as
-- "<team>/<key>", so one team's key never collides with another's); and each settled
-- auction's statistics, computed once at settlement instead of on every page view.
-- +goose Up
CREATE TABLE market_limits (
    id                   BIGINT PRIMARY KEY CHECK (id = 1),
    open_orders_per_team BIGINT NOT NULL CHECK (open_orders_per_team >= 1),
    bundles_per_order    BIGINT NOT NULL CHECK (bundles_per_order >= 1),
    pools_per_bundle     BIGINT NOT NULL CHECK (pools_per_bundle >= 1),
    updated_at           TIMESTAMPTZ NOT NULL
);
INSERT INTO market_limits (id, open_orders_per_team, bundles_per_order, pools_per_bundle, updated_at)
VALUES (1, 1000, 32, 32, CURRENT_TIMESTAMP);

UPDATE orders SET idem_key = team_id || '/' || idem_key WHERE idem_key IS NOT NULL;
-- Placing an order counts the team's live orders in the auction.
CREATE INDEX orders_team_auction ON orders (team_id, auction_id, status);

CREATE TABLE auction_stats (
    auction_id     BIGINT PRIMARY KEY REFERENCES auctions (id),
    orders         BIGINT NOT NULL,
    won            BIGINT NOT NULL,
    premium_median DOUBLE PRECISION,
    premium_mean   DOUBLE PRECISION,
    utilization    TEXT NOT NULL DEFAULT '{}'
);

-- At most one auction is open or closing at a time: each fixes its operator supply
-- from the capacity no team holds, so two live auctions would sell it twice.
CREATE UNIQUE INDEX auctions_one_live ON auctions ((status IN ('open', 'closing'))) WHERE status IN ('open', 'closing');

-- +goose Down
DROP INDEX auctions_one_live;
DROP TABLE auction_stats;
DROP INDEX orders_team_auction;
UPDATE orders SET idem_key = substr(idem_key, length(team_id) + 2) WHERE idem_key IS NOT NULL;
DROP TABLE market_limits;
