-- Pending browser logins are bounded: each names the client address (its
-- throttle key) that started it, so an address holds a few at most, and
-- expired ones are pruned by expiry (on each start and by the janitor).
ALTER TABLE web_logins ADD COLUMN source text NOT NULL DEFAULT '';
CREATE INDEX web_logins_expires_at ON web_logins (expires_at);
CREATE INDEX web_logins_source ON web_logins (source);
