// Package hub is the federation endpoint: OIDC login, OpenFGA permissions,
// PostgreSQL state, audit and the single /v1 endpoint in front of every
// spoke. See DESIGN.md (Hub). Not built yet: tracked by its own issue.
package hub
