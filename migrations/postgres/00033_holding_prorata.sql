-- Holding charges pro rata (issue 31). A rate set on a pool that had none applies
-- from the day it is set, and that first month is charged for its remaining days:
-- days is how many days of the month a charge covers and month_days how many the
-- month has, so amount = units * rate * days / month_days, rounded down to the
-- micro-dollar. Rows charged for a whole month before this migration, or by an older
-- release, keep 0 and 0 there: a whole month, amount = units * rate. Releases from
-- schema 28 on may run on this schema: they never read the new columns, and the
-- rows they write mean what 0 and 0 say. (If this migration is renumbered, change
-- the version below with it.)
-- +goose Up
ALTER TABLE holding_charges ADD COLUMN days INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holding_charges ADD COLUMN month_days INTEGER NOT NULL DEFAULT 0;
INSERT INTO schema_compat (version, oldest_schema) VALUES (33, 28);

-- +goose Down
DELETE FROM schema_compat WHERE version = 33;
ALTER TABLE holding_charges DROP COLUMN month_days;
ALTER TABLE holding_charges DROP COLUMN days;
