-- Which payment rule each winner of a run paid (issue 30), stored with its outcome:
-- run_outcomes.payment_rule, from the engine's winners[].core and
-- winners[].least_revenue (docs/final-round.md): 'clock_prices' (no final round:
-- the bundle at the clock's prices), 'core' (a core payment at the point nearest
-- VCG), 'core_least_revenue' (the least-revenue core point the solver found,
-- because the step to the point nearest VCG failed in the winner's part: still in
-- the core, at least VCG, never above the limit, but not proved nearest VCG) or
-- 'capped_prices' (its part was not proved optimal: the bundle at the clock's
-- prices capped at the limit); '' for an order that got nothing, and for runs from
-- before this migration or rows an older release writes (not recorded; the run's
-- payments and least_revenue_parts say what it can).
-- Releases from schema 34 may run on this schema: they never read the column, and
-- the rows they write take '' (not recorded), which is what they recorded. (If this
-- migration is renumbered, change the version below with it.)
-- +goose Up
ALTER TABLE run_outcomes ADD COLUMN payment_rule TEXT NOT NULL DEFAULT '';
INSERT INTO schema_compat (version, oldest_schema) VALUES (37, 34);

-- +goose Down
DELETE FROM schema_compat WHERE version = 37;
ALTER TABLE run_outcomes DROP COLUMN payment_rule;
