-- The refresh tokens a session has been renewed with (their SHA-256): one
-- presented again is a copy in someone else's hands, or the session's own
-- holder coming back after a thief renewed it first. Either way the hub
-- ends the session (refresh token rotation with reuse detection, RFC 9700
-- 4.14.2). Deleted with their session.
CREATE TABLE used_refresh_tokens (
    refresh_hash bytea PRIMARY KEY,
    session_id   uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    used_at      timestamptz NOT NULL
);
CREATE INDEX used_refresh_tokens_session ON used_refresh_tokens (session_id);
