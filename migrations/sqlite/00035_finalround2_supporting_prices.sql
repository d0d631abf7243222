-- Supporting prices of the final round (issue 30), stored with the run.
-- run_prices.supporting_price: the linear per-unit price, in whole micro-dollars, that
-- supports the final round's allocation as well as possible (auction/support.go,
-- final_round.prices), rounded half away from zero to the micro-dollar; NULL when the
-- run has none (no final round, the final round kept the clock's allocation, the
-- market was too large for the LP, or a run from before this migration).
-- run_outcomes.unsupported: the order is one the supporting prices fail to support
-- (final_round.unsupported): a winner that would not want its bundle at them, or a
-- loser that would want one of its bundles.
-- Releases from schema 34 may run on this schema: they never read these columns, and
-- the rows they write take NULL and FALSE (a run without supporting prices), which is
-- what those releases computed. (If this migration is renumbered, change the version
-- below with it.)
-- +goose Up
ALTER TABLE run_prices ADD COLUMN supporting_price INTEGER;
ALTER TABLE run_outcomes ADD COLUMN unsupported BOOLEAN NOT NULL DEFAULT FALSE;
INSERT INTO schema_compat (version, oldest_schema) VALUES (35, 34);

-- +goose Down
DELETE FROM schema_compat WHERE version = 35;
ALTER TABLE run_outcomes DROP COLUMN unsupported;
ALTER TABLE run_prices DROP COLUMN supporting_price;
