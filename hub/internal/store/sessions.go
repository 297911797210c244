package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Sessions are the refresh-token sessions and the pending browser logins.
type Sessions struct{ *db }

// Session is a refresh-token session; only the token's hash is stored.
type Session struct {
	ID          string
	IdentityID  string
	RefreshHash []byte
	Client      string
	ExpiresAt   time.Time
}

// Create stores a new session.
func (s *Sessions) Create(ctx context.Context, se Session) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (id, identity_id, refresh_hash, client, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, se.ID, se.IdentityID, se.RefreshHash, se.Client, se.ExpiresAt)
	return pgErr("create session", err)
}

// ReusedRefreshError is Sessions.Rotate's answer to a refresh token the
// session was already renewed with, more than RefreshReuseGrace ago: a
// copy of it is in other hands than the session's (RFC 9700 4.14.2). The
// session is revoked, so neither copy renews it any more.
type ReusedRefreshError struct {
	SessionID, IdentityID string
	UsedAt                time.Time
}

func (e *ReusedRefreshError) Error() string {
	return fmt.Sprintf("store: refresh token presented again (renewed session %s at %s): session revoked",
		e.SessionID, e.UsedAt.UTC().Format(time.RFC3339))
}

// RefreshReuseGrace is how long after a renewal its refresh token is only
// refused, not taken for a copy: a client whose answer was lost on the way
// retries with it, and two browser tabs may renew at once.
const RefreshReuseGrace = time.Minute

// Rotate swaps a live session's refresh hash for next (refresh
// token rotation) and returns the session; old is kept as used. An
// unknown, expired or revoked hash gives ErrNotFound, and so does one the
// session was renewed with within RefreshReuseGrace; one it was renewed
// with before that revokes the session and gives *ReusedRefreshError.
func (s *Sessions) Rotate(ctx context.Context, old, next []byte, expires, now time.Time) (Session, error) {
	var se Session
	var id, ident uuid.UUID
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE sessions SET refresh_hash = $2, expires_at = $3
			WHERE refresh_hash = $1 AND revoked_at IS NULL AND expires_at > $4
			RETURNING id, identity_id, client, expires_at`, old, next, expires, now).Scan(&id, &ident, &se.Client, &se.ExpiresAt)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO used_refresh_tokens (refresh_hash, session_id, used_at) VALUES ($1, $2, $3)`, old, id, now)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		reused := &ReusedRefreshError{}
		var sid, iid uuid.UUID
		// The revocation and its notice commit together: every replica
		// refuses the session's access tokens from then on.
		rerr := s.inTx(ctx, func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `UPDATE sessions SET revoked_at = $2 FROM used_refresh_tokens u
			WHERE u.refresh_hash = $1 AND sessions.id = u.session_id AND u.used_at < $3 AND sessions.revoked_at IS NULL
			RETURNING sessions.id, sessions.identity_id, u.used_at`, old, now, now.Add(-RefreshReuseGrace)).Scan(&sid, &iid, &reused.UsedAt)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, authzChannel, SessionEnded(sid.String()).Payload())
			return err
		})
		if rerr == nil {
			reused.SessionID, reused.IdentityID = sid.String(), iid.String()
			return Session{}, reused
		}
		if !errors.Is(rerr, pgx.ErrNoRows) {
			return Session{}, pgErr("session", rerr)
		}
	}
	se.ID, se.IdentityID, se.RefreshHash = id.String(), ident.String(), next
	return se, pgErr("session", err)
}

// PruneUsedRefreshTokens forgets the refresh tokens sessions were renewed
// with before cutoff: one presented again later is only refused (the
// session it renewed lives on), not taken for a copy.
func (s *Sessions) PruneUsedRefreshTokens(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM used_refresh_tokens WHERE used_at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("prune used refresh tokens", err)
}

// RevokeByHash ends the session holding refresh hash h and returns its
// id (ErrNotFound if none holds it or it already ended).
func (s *Sessions) RevokeByHash(ctx context.Context, h []byte, now time.Time) (string, error) {
	return s.revoke(ctx, `refresh_hash = $1`, h, now)
}

// RevokeByID revokes session id (ErrNotFound if it is unknown or
// already revoked). Like Sessions.RevokeByHash, it tells every replica, which then
// refuses the session's access tokens from their next request.
func (s *Sessions) RevokeByID(ctx context.Context, id string, now time.Time) error {
	if uuid.Validate(id) != nil {
		return fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	_, err := s.revoke(ctx, `id = $1`, id, now)
	return err
}

func (s *Sessions) revoke(ctx context.Context, where string, arg any, now time.Time) (string, error) {
	var id uuid.UUID
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE sessions SET revoked_at = $2 WHERE `+where+` AND revoked_at IS NULL RETURNING id`, arg, now).Scan(&id)
		if err == nil { // every replica drops what it holds of the session (ListenAuthzChanges)
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, authzChannel, SessionEnded(id.String()).Payload())
		}
		return pgErr("session", err)
	})
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// Live reports whether session id exists and is not revoked: the
// access tokens minted for it (their "sid") are good only while it is.
func (s *Sessions) Live(ctx context.Context, id string) (bool, error) {
	if uuid.Validate(id) != nil {
		return false, nil
	}
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND revoked_at IS NULL)`, id).Scan(&live)
	return live, pgErr("session", err)
}

// LiveOf reports which of the sessions ids exist and are not revoked
// (Live for many: absent from the answer is not live).
func (s *Sessions) LiveOf(ctx context.Context, ids []string) (map[string]bool, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if uuid.Validate(id) == nil {
			valid = append(valid, id)
		}
	}
	out := make(map[string]bool, len(valid))
	if len(valid) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM sessions WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL`, valid)
	if err != nil {
		return nil, pgErr("sessions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, pgErr("sessions", err)
		}
		out[id] = true
	}
	return out, pgErr("sessions", rows.Err())
}

// Prune deletes sessions that expired or were revoked before cutoff.
func (s *Sessions) Prune(ctx context.Context, cutoff time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
	return pgErr("prune sessions", err)
}

// WebLogin is a pending browser login (authorization code + PKCE).
type WebLogin struct {
	State, Verifier, Nonce, ReturnTo string
	// Source is who started it (the client address's throttle key).
	Source    string
	ExpiresAt time.Time
}

// WebLoginLimits bound the pending browser logins: PerSource for one
// Source, Total for all of them.
type WebLoginLimits struct{ PerSource, Total int }

// ErrTooManyWebLogins refuses a login start past WebLoginLimits.
var ErrTooManyWebLogins = errors.New("store: too many pending logins")

// PutWebLogin stores a pending login, first deleting the expired ones (at
// now); past lim it stores nothing and answers ErrTooManyWebLogins.
func (s *Sessions) PutWebLogin(ctx context.Context, w WebLogin, now time.Time, lim WebLoginLimits) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM web_logins WHERE expires_at <= $1`, now); err != nil {
			return pgErr("prune web logins", err)
		}
		var mine, all int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE source = $1), count(*) FROM web_logins`, w.Source).
			Scan(&mine, &all); err != nil {
			return pgErr("web logins", err)
		}
		if mine >= lim.PerSource {
			return fmt.Errorf("%w: %d from this address", ErrTooManyWebLogins, mine)
		}
		if all >= lim.Total {
			return fmt.Errorf("%w: %d in all", ErrTooManyWebLogins, all)
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_logins (state, verifier, nonce, return_to, source, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, w.State, w.Verifier, w.Nonce, w.ReturnTo, w.Source, w.ExpiresAt)
		return pgErr("web login", err)
	})
}

// PruneWebLogins deletes the pending logins expired at now.
func (s *Sessions) PruneWebLogins(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM web_logins WHERE expires_at <= $1`, now)
	return tag.RowsAffected(), pgErr("prune web logins", err)
}

// TakeWebLogin removes and returns a pending login; it can be taken once.
func (s *Sessions) TakeWebLogin(ctx context.Context, state string, now time.Time) (WebLogin, error) {
	w := WebLogin{State: state}
	err := s.pool.QueryRow(ctx, `DELETE FROM web_logins WHERE state = $1 RETURNING verifier, nonce, return_to, expires_at`, state).
		Scan(&w.Verifier, &w.Nonce, &w.ReturnTo, &w.ExpiresAt)
	if err == nil && !now.Before(w.ExpiresAt) {
		return WebLogin{}, fmt.Errorf("web login: %w (expired)", ErrNotFound)
	}
	return w, pgErr("web login", err)
}

// CountWebLogins counts the pending browser logins stored, expired or not.
func (s *Sessions) CountWebLogins(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM web_logins`).Scan(&n)
	return n, pgErr("web logins", err)
}
