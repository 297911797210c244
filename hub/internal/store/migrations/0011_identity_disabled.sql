-- A disabled identity (drover disable-user) cannot log in nor use a token
-- it was given; its grants and memberships stay, inert, until it is
-- enabled again or removed.
ALTER TABLE identities ADD COLUMN disabled_at timestamptz;
