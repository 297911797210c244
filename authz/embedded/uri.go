package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DatastoreURI returns the PostgreSQL URL dsn with search_path set to
// schema, so that OpenFGA's tables live in a schema of their own in dsn's
// database. OpenFGA's migrations read the datastore URI as a URL, so a
// keyword/value connection string ("host=… dbname=…") is refused, as is
// anything pgx refuses.
func DatastoreURI(dsn, schema string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return "", errors.New("the embedded OpenFGA needs the PostgreSQL connection string as a URL (postgres://…), not keyword=value pairs")
	}
	if _, err := pgconn.ParseConfig(dsn); err != nil {
		return "", fmt.Errorf("embedded openfga: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("embedded openfga: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// migrationLock is the key of the PostgreSQL advisory lock Start holds
// while it migrates OpenFGA's tables and starts the server.
const migrationLock = 0x6f70656e666761 // "openfga"

// lockDatastore connects to uri, creates schema if it is given and
// missing, and holds an advisory lock until the returned function is
// called, so that servers starting together on one database migrate it one
// at a time. It waits by trying again every lockPoll rather than in
// pg_advisory_lock: a waiting statement holds a snapshot, and the
// migration that builds an index CONCURRENTLY waits for every snapshot
// to end, so the holder would wait on the waiter.
func lockDatastore(ctx context.Context, uri, schema string) (unlock func(), err error) {
	conn, err := pgx.Connect(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("embedded openfga: connect to the datastore: %w", err)
	}
	unlock = func() { _ = conn.Close(context.WithoutCancel(ctx)) } // closing the session releases the lock
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(migrationLock)).Scan(&ok); err != nil {
			unlock()
			return nil, fmt.Errorf("embedded openfga: lock the datastore: %w", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			unlock()
			return nil, fmt.Errorf("embedded openfga: another server held the datastore's migration lock: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if schema != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			unlock()
			return nil, fmt.Errorf("embedded openfga: create schema %s: %w", schema, err)
		}
	}
	return unlock, nil
}

// lockPoll is how often lockDatastore tries the lock again.
const lockPoll = 50 * time.Millisecond
