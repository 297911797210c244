// Package api holds the wire types of the Drover API and the typed Go client
// that the CLI, the tests, the hub and the agents share. Entities carry the
// raft indexes that created and last modified them. Errors are *Error values
// with a stable Code; test them with errors.Is against the Err* sentinels.
package api
