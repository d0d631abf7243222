-- Rollback guard (docs/operating.md, "Rolling back"). A release refuses a database
-- whose schema is newer than its newest migration unless every newer migration
-- applied there declares it may: a migration that keeps older releases working
-- (one that only adds a table or a column they never read) inserts a row here with
-- its own version and the oldest release's newest migration that may run on it:
--   INSERT INTO schema_compat (version, oldest_schema) VALUES (<this version>, <N>);
-- A migration that inserts nothing refuses every older release, which is the safe
-- default. This migration declares nothing: releases before it do not read it.
-- +goose Up
CREATE TABLE schema_compat (
    version       BIGINT PRIMARY KEY,
    oldest_schema BIGINT NOT NULL CHECK (oldest_schema > 0 AND oldest_schema < version)
);

-- +goose Down
DROP TABLE schema_compat;
