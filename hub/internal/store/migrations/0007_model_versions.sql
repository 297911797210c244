-- Every write to a model row gives it a new version from one sequence, so
-- a version names one content of one row for the life of the database:
-- the hub keeps listed models' JSON by it (hub/listcache.go) and reads
-- only rows whose version changed. PostgreSQL's xmin names a row's
-- content as well while the cluster lives, but a restore from a dump or a
-- switchover to a logical replica writes every row again under new
-- transaction ids, which may be ids a running hub has seen on other
-- contents of the same rows; versions are data, and move with them.
CREATE SEQUENCE model_versions;
-- A volatile default rewrites the table: each existing row gets its own.
ALTER TABLE models ADD COLUMN version bigint NOT NULL DEFAULT nextval('model_versions');

CREATE FUNCTION models_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := nextval('model_versions');
    RETURN NEW;
END $$;
CREATE TRIGGER models_version BEFORE UPDATE ON models
    FOR EACH ROW EXECUTE FUNCTION models_version();
