// Package testkit is the test-support package for the whole repository:
// free loopback ports, condition polling instead of sleeps, goroutine-leak
// checks, and private PostgreSQL servers with template databases.
//
// Invariants:
//   - Nothing here sleeps to assert; waiting is always on a condition with a
//     deadline taken from a context.
//   - A PostgreSQL server started by StartPostgres listens on a unix socket in
//     its own temporary directory (TCP on 127.0.0.1 only when asked), and is
//     stopped and removed when the test ends.
//   - initdb runs at most once per PostgreSQL version per machine: its output is
//     cached in os.TempDir under a file lock and copied for each server.
package testkit
