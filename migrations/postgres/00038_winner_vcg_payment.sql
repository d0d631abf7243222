-- Each core winner's VCG payment (issue 30), stored with its outcome:
-- run_outcomes.vcg_payment, the engine's winners[].vcg in dollars (docs/final-round.md):
-- what the winner's bundle cost the other orders, the least it could pay in the core.
-- A winner that paid a core payment paid at least this and at most its limit, so
-- the teams and finance can check the claim "bid your true value" rests on, and see
-- what a lower bid could at most have saved. NULL where the winner did not pay a
-- core payment (the clock alone, capped prices, an order that got nothing), and for
-- runs from before this migration or rows an older release writes (not recorded).
-- Releases from schema 34 may run on this schema: they never read the column, and
-- the rows they write take NULL (not recorded), which is what they recorded. (If this
-- migration is renumbered, change the version below with it.)
-- +goose Up
ALTER TABLE run_outcomes ADD COLUMN vcg_payment DOUBLE PRECISION;
INSERT INTO schema_compat (version, oldest_schema) VALUES (38, 34);

-- +goose Down
DELETE FROM schema_compat WHERE version = 38;
ALTER TABLE run_outcomes DROP COLUMN vcg_payment;
