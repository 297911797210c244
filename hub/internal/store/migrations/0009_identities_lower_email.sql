-- People are found by email whatever its case (grants, group members, the
-- audit filter), and a person granted access by email before their first
-- login has a pending identity (issuer '') that the login takes over.
CREATE INDEX identities_lower_email ON identities (lower(email)) WHERE kind = 'user';
