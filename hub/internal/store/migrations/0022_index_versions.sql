-- The hub's federation stream (GET /v1/watch) follows the index by
-- version: controllers take their versions from the models' sequence, so
-- one number orders every write to the index, and every removal takes one
-- too (index_removals).
--
-- A version is taken when a row is written, not when its transaction
-- commits: a stream that has read version 12 may later see 11 commit. So
-- every transaction that takes an index version first takes a shared
-- advisory lock (the pair below), held until it ends; a reader
-- (store.IndexHorizon) reads the sequence and then the holders of that
-- lock, and serves only versions that no running transaction can still
-- commit (hub/federation.go).
CREATE FUNCTION index_version() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- 1146244950, 1229215776: "DROV", "IDX " (pg_locks: classid, objid, objsubid 2).
    PERFORM pg_advisory_xact_lock_shared(1146244950, 1229215776);
    RETURN nextval('model_versions');
END $$;

ALTER TABLE models ALTER COLUMN version SET DEFAULT index_version();
CREATE OR REPLACE FUNCTION models_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := index_version();
    RETURN NEW;
END $$;

ALTER TABLE controllers ADD COLUMN version bigint NOT NULL DEFAULT index_version();
CREATE TRIGGER controllers_version BEFORE UPDATE ON controllers
    FOR EACH ROW EXECUTE FUNCTION models_version();

-- Rows gone from the index, kept for streams resuming after them. org and
-- controller_uuid say who may be told (a model's organization and
-- controller; a controller's own UUID and organization).
CREATE TABLE index_removals (
    version         bigint PRIMARY KEY DEFAULT index_version(),
    kind            text NOT NULL,
    id              text NOT NULL,
    org             text,
    controller_uuid uuid,
    removed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX index_removals_removed_at ON index_removals (removed_at);

-- The highest version of a removal the hub has pruned: a stream resuming
-- from before it may have missed one, and gets a reset.
CREATE TABLE index_removals_horizon (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint NOT NULL
);
INSERT INTO index_removals_horizon (version) VALUES (0);

CREATE FUNCTION models_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO index_removals (kind, id, org, controller_uuid)
        VALUES ('model', OLD.uuid::text, OLD.org, OLD.controller_uuid);
    RETURN OLD;
END $$;
CREATE TRIGGER models_removed AFTER DELETE ON models
    FOR EACH ROW EXECUTE FUNCTION models_removed();

CREATE FUNCTION controllers_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO index_removals (kind, id, org, controller_uuid)
        VALUES ('controller', OLD.name, OLD.org, OLD.uuid);
    RETURN OLD;
END $$;
CREATE TRIGGER controllers_removed AFTER DELETE ON controllers
    FOR EACH ROW EXECUTE FUNCTION controllers_removed();

-- One notification per statement, delivered at commit: every replica's
-- streams wake and read what changed (store.ListenIndexChanges).
CREATE FUNCTION index_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('drover_index_changed', '');
    RETURN NULL;
END $$;
CREATE TRIGGER models_changed AFTER INSERT OR UPDATE OR DELETE ON models
    FOR EACH STATEMENT EXECUTE FUNCTION index_changed();
CREATE TRIGGER controllers_changed AFTER INSERT OR UPDATE OR DELETE ON controllers
    FOR EACH STATEMENT EXECUTE FUNCTION index_changed();
