-- When each auction actually stopped taking bids (issue 24). closes_at is the
-- scheduled end of the bid window; an operator may close early, and pages, charts
-- and the API order auctions by when they closed. Auctions closed before this column
-- existed are dated by their settlement (closing and settling ran together), or by
-- their scheduled close when they failed.
-- +goose Up
ALTER TABLE auctions ADD COLUMN closed_at TIMESTAMPTZ;
UPDATE auctions SET closed_at = COALESCE(settled_at, closes_at) WHERE status IN ('closing', 'settled', 'failed');
CREATE INDEX auctions_closed ON auctions (status, closed_at);

-- +goose Down
DROP INDEX auctions_closed;
ALTER TABLE auctions DROP COLUMN closed_at;
