-- The final round after the clock's binding run (issue 23). auction_runs: whether a
-- final round ran, its welfare and the clock's, the best proven bound, whether the
-- allocation is proved optimal, and the final round's own time. run_outcomes: each
-- order's bundle at the run's published prices (at_prices; the payment differs only
-- where the final round could not support its allocation with uniform prices) and
-- the bundle the clock alone gave it (clock_bundle, -1 for none), to show who the
-- final round changed. Rows from before keep payment = at_prices and the clock's
-- bundle, which is what they were.
-- +goose Up
ALTER TABLE auction_runs ADD COLUMN final_round BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE auction_runs ADD COLUMN welfare DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE auction_runs ADD COLUMN clock_welfare DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE auction_runs ADD COLUMN welfare_bound DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE auction_runs ADD COLUMN optimal BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE auction_runs ADD COLUMN final_seconds DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE run_outcomes ADD COLUMN at_prices DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE run_outcomes ADD COLUMN clock_bundle INTEGER NOT NULL DEFAULT -1;
UPDATE run_outcomes SET at_prices = payment, clock_bundle = bundle_index;

-- +goose Down
ALTER TABLE run_outcomes DROP COLUMN clock_bundle;
ALTER TABLE run_outcomes DROP COLUMN at_prices;
ALTER TABLE auction_runs DROP COLUMN final_seconds;
ALTER TABLE auction_runs DROP COLUMN optimal;
ALTER TABLE auction_runs DROP COLUMN welfare_bound;
ALTER TABLE auction_runs DROP COLUMN clock_welfare;
ALTER TABLE auction_runs DROP COLUMN welfare;
ALTER TABLE auction_runs DROP COLUMN final_round;
