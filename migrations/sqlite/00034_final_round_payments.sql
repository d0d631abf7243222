-- Core-selecting payments in the final round (issue 30). auction_runs.payments: the
-- rule the run's payments followed, as the engine's final_round.payments says: 'core'
-- (every winner paid a core-selecting payment), 'capped_prices' (every winner paid
-- its bundle at the clock's prices capped at its limit, the rule before this
-- migration), 'mixed', or '' (no final round, or a run from before: those paid
-- capped prices when a final round ran). Releases from schema 31 on may run on this
-- schema: they never read the column, and the rows they write take ''. (If this
-- migration is renumbered, change the version below with it.)
-- +goose Up
ALTER TABLE auction_runs ADD COLUMN payments TEXT NOT NULL DEFAULT '';
INSERT INTO schema_compat (version, oldest_schema) VALUES (34, 31);

-- +goose Down
DELETE FROM schema_compat WHERE version = 34;
ALTER TABLE auction_runs DROP COLUMN payments;
