// Package hub is the federation endpoint: OIDC login, OpenFGA permissions,
// PostgreSQL state and audit in front of every spoke. See docs/hub.md.
//
// Invariants: every /v1 route is authenticated with a hub session token and
// authorized with OpenFGA (Check for one object, ListObjects for listings);
// every mutating request is audited whatever its result; permission tuples
// change only through the store's transactional outbox.
package hub
