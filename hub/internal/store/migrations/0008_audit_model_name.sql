-- Audit entries keep the name their model had, so the log still names a
-- model after it is destroyed and can be filtered by that name. Entries
-- of models that still exist take their name now; those of models gone
-- before this migration have none.
ALTER TABLE audit_log ADD COLUMN model_name text NOT NULL DEFAULT '';
UPDATE audit_log SET model_name = m.name FROM models m WHERE m.uuid = audit_log.model_uuid;
CREATE INDEX audit_log_model_name ON audit_log (model_name, at) WHERE model_name <> '';
