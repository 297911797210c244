-- Each model row carries its owner's name (Identity.Name), kept by
-- triggers, so GET /v1/models reads models alone.
--
-- Before, the listing named owners either by a join with identities or by
-- a first query over the same visible models. The join is planned as a hash
-- join followed by a sort of every row listed, whenever the planner has no
-- statistics that favour a memoized nested loop (twice the listing's time
-- for 10,000 models); the first query scanned the visible models a second
-- time for a handful of owners (a third of the query time of a listing
-- of 10,000, and half of one that shows 1% of them).
--
-- identity_name is Identity.Name (store/identities.go): the email, else a
-- service account's display name (its client id), else the subject.
CREATE FUNCTION identity_name(email text, kind text, display_name text, subject text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(nullif(email, ''), nullif(CASE WHEN kind = 'service-account' THEN display_name END, ''), subject, '');

ALTER TABLE models ADD COLUMN owner_name text NOT NULL DEFAULT '';
UPDATE models m SET owner_name = identity_name(i.email, i.kind, i.display_name, i.subject)
    FROM identities i WHERE i.id = m.owner;
-- Renaming an identity finds its models by this index.
CREATE INDEX models_owner ON models (owner);

-- A model's owner_name follows its owner whenever a row is written with
-- one (insert, adoption, or the upsert that claims an unowned row).
CREATE FUNCTION models_owner_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.owner_name := coalesce((SELECT identity_name(i.email, i.kind, i.display_name, i.subject)
        FROM identities i WHERE i.id = NEW.owner), '');
    RETURN NEW;
END $$;
CREATE TRIGGER models_owner_name BEFORE INSERT OR UPDATE OF owner ON models
    FOR EACH ROW EXECUTE FUNCTION models_owner_name();

-- A login that changes an identity's name renames it on its models, in
-- the login's transaction; logins that change nothing touch no model.
CREATE FUNCTION identities_rename_models() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE models SET owner_name = identity_name(NEW.email, NEW.kind, NEW.display_name, NEW.subject)
        WHERE owner = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER identities_rename_models AFTER UPDATE OF email, kind, display_name, subject ON identities
    FOR EACH ROW
    WHEN (identity_name(OLD.email, OLD.kind, OLD.display_name, OLD.subject)
        IS DISTINCT FROM identity_name(NEW.email, NEW.kind, NEW.display_name, NEW.subject))
    EXECUTE FUNCTION identities_rename_models();
