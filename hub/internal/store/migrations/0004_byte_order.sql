-- Listings are in byte order whatever the database's default collation.
-- Under en_US.UTF-8 "ab" sorts before "a-c" and "m10" before "m-9"; under
-- C after them: the same models listed differently from one deployment to
-- the next. The columns listings sort by (models by org and name,
-- organizations and controllers by name) use the "C" collation, so ORDER
-- BY on them is byte order and still reads their indexes in order: GET
-- /v1/models reads models in (org, name) order and never sorts.
--
-- Changing a column's collation rewrites no table; it rebuilds the
-- indexes on the column and re-checks its foreign keys (about 0.2 s for
-- 100,000 models). Equality is unchanged, both collations being
-- deterministic, so every unique key and foreign key means what it did.
-- Every organization column follows organizations.name, so no key or join
-- mixes two collations.
ALTER TABLE organizations ALTER COLUMN name TYPE text COLLATE "C";
ALTER TABLE identities ALTER COLUMN org TYPE text COLLATE "C";
ALTER TABLE service_accounts ALTER COLUMN org TYPE text COLLATE "C";
ALTER TABLE groups ALTER COLUMN org TYPE text COLLATE "C", ALTER COLUMN name TYPE text COLLATE "C";
ALTER TABLE controllers ALTER COLUMN org TYPE text COLLATE "C", ALTER COLUMN name TYPE text COLLATE "C";
ALTER TABLE models ALTER COLUMN org TYPE text COLLATE "C", ALTER COLUMN name TYPE text COLLATE "C";
