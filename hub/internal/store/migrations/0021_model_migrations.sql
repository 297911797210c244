-- Model migrations between controllers (hub/internal/migration): one row a
-- migration with its current phase, and an append-only event table that
-- records every phase change and every step's intent and result. A model
-- has at most one active migration (the partial unique index); the phase
-- changes only along hub/internal/migration's edge table (ModelMigrations.
-- Advance is the one statement that writes it).
CREATE TABLE model_migrations (
    id                uuid PRIMARY KEY,
    model_uuid        uuid NOT NULL,
    model_name        text NOT NULL,
    source_controller uuid NOT NULL,
    target_controller uuid NOT NULL,
    phase             text NOT NULL,
    attempt           integer NOT NULL DEFAULT 0,
    message           text NOT NULL DEFAULT '',
    failure           text NOT NULL DEFAULT '',
    abort_requested   boolean NOT NULL DEFAULT false,
    minions           jsonb NOT NULL DEFAULT '{}',
    requested_by      text NOT NULL,
    started_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    ended_at          timestamptz,
    CHECK (source_controller <> target_controller),
    CHECK (phase IN ('PRECHECK', 'QUIESCE', 'EXPORT', 'IMPORT', 'VALIDATION', 'SUCCESS',
                     'LOGTRANSFER', 'REAP', 'DONE', 'ABORTING', 'ABORTED', 'REAPFAILED')),
    CHECK (length(message) <= 4096 AND length(failure) <= 4096)
);
CREATE UNIQUE INDEX model_migrations_one_active ON model_migrations (model_uuid)
    WHERE phase NOT IN ('DONE', 'ABORTED', 'REAPFAILED');
CREATE INDEX model_migrations_source ON model_migrations (source_controller, started_at);
CREATE INDEX model_migrations_target ON model_migrations (target_controller, started_at);
CREATE INDEX model_migrations_started ON model_migrations (started_at);

CREATE TABLE model_migration_events (
    seq          bigserial PRIMARY KEY,
    migration_id uuid NOT NULL REFERENCES model_migrations (id),
    at           timestamptz NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('phase', 'intent', 'result', 'abort')),
    phase        text NOT NULL,
    attempt      integer NOT NULL,
    detail       text NOT NULL DEFAULT '' CHECK (length(detail) <= 4096)
);
CREATE INDEX model_migration_events_migration ON model_migration_events (migration_id, seq);

-- The event table is append-only: an audit of what the driver did.
CREATE FUNCTION model_migration_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'model_migration_events is append-only' USING ERRCODE = '23514';
END
$$;
CREATE TRIGGER model_migration_events_append_only
    BEFORE UPDATE OR DELETE ON model_migration_events
    FOR EACH ROW EXECUTE FUNCTION model_migration_events_append_only();
