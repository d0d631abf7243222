-- Which payment rule settled which part of the final round (issue 30), stored with
-- the run as the engine's final_round says it (docs/final-round.md): final_parts, how
-- many independent parts the market split into; core_parts, how many of them paid
-- core-selecting payments (the others paid capped prices); least_revenue_parts, how
-- many of the core parts paid the least-revenue core point the LP found, because the
-- step to the core point nearest VCG failed on a degenerate system (in the core and
-- of least revenue, but not proved nearest VCG). All three NULL when not recorded: no
-- final round, a run from before this migration, or a row written by an older
-- release (which may have paid least-revenue points without saying so); 0 is a
-- recorded none.
-- Releases from schema 34 may run on this schema: they never read these columns, and
-- the rows they write take NULL (not recorded), which is what they recorded. (If this
-- migration is renumbered, change the version below with it.)
-- +goose Up
ALTER TABLE auction_runs ADD COLUMN final_parts INTEGER;
ALTER TABLE auction_runs ADD COLUMN core_parts INTEGER;
ALTER TABLE auction_runs ADD COLUMN least_revenue_parts INTEGER;
INSERT INTO schema_compat (version, oldest_schema) VALUES (36, 34);

-- +goose Down
DELETE FROM schema_compat WHERE version = 36;
ALTER TABLE auction_runs DROP COLUMN least_revenue_parts;
ALTER TABLE auction_runs DROP COLUMN core_parts;
ALTER TABLE auction_runs DROP COLUMN final_parts;
