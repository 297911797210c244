// Package authz holds the OpenFGA authorization model used by the hub.
// Not built yet: tracked by the hub issue.
package authz
