// Package apiv1 is the JSON API's contract, version 1: the request and response
// bodies of every /api/v1 operation, as the server (web) encodes and decodes them
// and as the cluster agent (agent) reads and sends them. web/openapi.json documents
// these types; web's TestOpenAPIMatchesTheGoTypes checks it field by field (names,
// JSON types, required), so a field added here and not there fails.
//
// The package imports nothing but the standard library: the agent, which must carry
// nothing of the server, imports it (deps_test.go).
//
// Conventions: money and prices per unit are strings of dollars ("1234.56", exact to
// the micro-dollar; a request may give an amount as a plain JSON number too: Money);
// times are RFC 3339; a field without omitempty is always sent.
package apiv1
