// Package api is graphtide's HTTP JSON API: the server that `graphtide
// serve` runs on --http-addr, the queries behind it, which `graphtide
// query --dir` runs directly on a store (Reader), and the typed Client
// that `graphtide query --server` (and any Go program) asks a server with.
//
// What it promises:
//
//   - Every endpoint answers JSON (except /metrics, Prometheus text, and
//     /v1/openapi.yaml, the API's OpenAPI 3 document, which the package's
//     tests check the server against). Errors are {"error": "..."} with a
//     4xx or 5xx status that says whose fault it is.
//   - A vertex can be given wherever one is expected as a decimal id or as a
//     string key known to the key dictionary ("key:" forces a key that looks
//     like a number); unknown keys are 404, never assigned an id (an
//     analytic's root included: no request writes to the key
//     dictionary). Every id in
//     a response that belongs to a string key carries that key next to it.
//   - Replicas (serve instances of one graph, each with its own data
//     directory and consumer group) are interchangeable for a client that
//     names vertices by number or key: pages of neighbors come in an order
//     every replica shares (cursor.go) and any replica continues another's
//     next_cursor. The ids of keys, seqs and type numbers are each
//     replica's own, and said so wherever they are answered.
//   - Each read is answered from one static view (fresh by default, stale on
//     request), so its numbers are consistent with each other and with the
//     view's sequence number, which the response reports. Every view a
//     request takes is released before the request returns.
//   - No request can exhaust the server: each runs under a deadline (the
//     request timeout, checked between batches of work), bodies are capped
//     (1 MiB), pages and top-k lists are capped, a path search stops with
//     422 once it has read more edges than its budget, and at most a few
//     path searches run at once. A request that follows GET /v1/changes
//     (long polling or Server-Sent Events) holds no queue of its own: it
//     reads the views' edge log, is told 410 when it falls behind what
//     the log keeps, and is bounded in number, wait, duration and write
//     time (follow.go); shutdown ends it.
//   - When bearer tokens are configured, every /v1 endpoint and the
//     profiles of /debug/pprof/ require "Authorization: Bearer <token>" of
//     one of them (compared in constant time with every token; 401
//     otherwise), and the token's scopes must hold the route's: read for
//     every GET of /v1, write for POST /v1/batches, admin for registering
//     and deleting analytics and for the profiles (403 naming the scope
//     otherwise). Every route has its scope decided: New refuses a route
//     that has none. /healthz, /readyz and /metrics stay open so that probes
//     and scrapers need no secret; they reveal no graph data.
//
// Ids are JSON integers up to 2^63-1; string keys' ids start at 2^62, above
// what a JavaScript number holds exactly, so such clients should read ids
// with a big-integer-aware parser or use the keys.
package api
