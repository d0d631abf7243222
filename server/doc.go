// Package server is Clearhouse's server wiring: Config (every setting of `clearhouse
// serve`), App (the services on one database, the web server, the scheduled jobs and
// their metrics, opened and closed in order), OpenMigrated (the database at the
// schema this binary knows) and Verify (every invariant `clearhouse verify` checks).
// cmd/clearhouse's verbs parse flags and call it; the end-to-end tests (e2e/...) run
// the same wiring. Like the server's binary, it carries no Kubernetes package.
package server
