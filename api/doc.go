// Package api holds the wire types of the Drover API and the typed Go client
// that the CLI, the tests, the hub and the agents share. Client makes the
// controller-wide calls (controller, charms, the list of models) and
// Client.Model(uuid) returns the ModelClient for the calls under one model;
// both send through the same transport and index tracking. Entities carry
// the raft indexes that created and last modified them. Errors are *Error
// values with a stable Code; test them with errors.Is against the Err*
// sentinels.
package api
