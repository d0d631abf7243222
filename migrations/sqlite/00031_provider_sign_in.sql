-- Sign-in through the company's OpenID Provider (issue 34). A user may be linked to
-- one provider identity (oidc_subject: the issuer, a space and the subject); each user
-- records where their role and team came from (access_source): 'local' when granted in
-- Clearhouse, 'provider' when the group mapping gave them at the last sign-in (the group
-- in access_group), 'revoked' when the last sign-in found no mapped group and so
-- disabled the account (a later sign-in with a mapped group enables it again; an account
-- an operator disabled stays disabled). oidc_logins holds each sign-in under way: the
-- hash of its state, of the browser cookie it is bound to, its nonce and PKCE verifier;
-- a callback takes its row once. Releases from schema 28 on may run on this schema: they
-- never read the new columns or table, and a user they add is a local grant (the
-- default); they only lack company sign-in. (If this migration is renumbered, change
-- the version below with it.)
-- +goose Up
ALTER TABLE users ADD COLUMN oidc_subject TEXT;
ALTER TABLE users ADD COLUMN access_source TEXT NOT NULL DEFAULT 'local' CHECK (access_source IN ('local', 'provider', 'revoked'));
ALTER TABLE users ADD COLUMN access_group TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX users_oidc_subject ON users (oidc_subject);

CREATE TABLE oidc_logins (
    state_hash   TEXT PRIMARY KEY,
    browser_hash TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    next         TEXT NOT NULL DEFAULT '/',
    expires_at   DATETIME NOT NULL
);
CREATE INDEX oidc_logins_expires ON oidc_logins (expires_at);
INSERT INTO schema_compat (version, oldest_schema) VALUES (31, 28);

-- +goose Down
DELETE FROM schema_compat WHERE version = 31;
DROP TABLE oidc_logins;
DROP INDEX users_oidc_subject;
ALTER TABLE users DROP COLUMN access_group;
ALTER TABLE users DROP COLUMN access_source;
ALTER TABLE users DROP COLUMN oidc_subject;
