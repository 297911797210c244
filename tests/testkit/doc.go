// Package testkit is the test-support package for the whole repository:
// free loopback ports, condition polling instead of sleeps, goroutine-leak
// checks, and private PostgreSQL servers (internal/pgserver) with template
// databases.
//
// Invariants:
//   - Nothing here sleeps to assert; waiting is always on a condition with a
//     deadline taken from a context.
//   - A PostgreSQL server started by StartPostgres lives in its own temporary
//     directory and is stopped and removed when the test ends.
package testkit
