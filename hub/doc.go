// Package hub is the federation endpoint: OIDC login, OpenFGA permissions,
// PostgreSQL state and audit in front of every spoke. See docs/hub.md.
//
// The root package holds the wiring (server.go, config.go), the API's
// table (endpoints.go) and its handlers, grouped by resource; each step a
// request goes through is a package of its own under internal/:
//
//   - authn: who is calling (logins, sessions, the Principal).
//   - gate: what the caller may do (OpenFGA checks and their caches).
//   - proxy: the relay of model calls to controllers, once decided.
//   - indexer: the model index, following every controller's events.
//   - store: PostgreSQL; outbox: tuples to OpenFGA; token: signing keys.
//   - reply and ttlcache: answers' shape, and the short-lived caches.
//
// The internal packages never import the root; the root hands them its
// hooks through their Configs.
//
// Invariants: every /v1 route is authenticated with a hub session token and
// authorized with OpenFGA (Check for one object, ListObjects for listings);
// every mutating request is audited whatever its result; permission tuples
// change only through the store's transactional outbox.
package hub
