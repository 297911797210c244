// Package pgserver runs a private PostgreSQL server as a child process: the
// embedded database of `droverd hub` (without --dsn) and `droverd dev`,
// and, through tests/testkit, every test's throwaway server.
//
// Invariants:
//   - A server listens on a unix socket in its own directory (TCP on
//     127.0.0.1 only when asked), keeps its data in dir/data and its output
//     in dir/postgres.log; an existing data directory is reused.
//   - initdb runs at most once per PostgreSQL version per machine: its output
//     is cached in os.TempDir under a file lock and copied for each new
//     data directory.
//   - As root, the server runs as the postgres OS user, in a process group of
//     its own, and dies with its parent; a directory that user cannot enter
//     is refused before the server starts (AccessError).
//   - Only a Durable server keeps fsync, synchronous commit and full-page
//     writes on, and it is stopped with a fast shutdown (a checkpoint).
package pgserver
