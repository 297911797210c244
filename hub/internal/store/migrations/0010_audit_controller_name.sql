-- Audit entries keep the name their controller had, as they keep their
-- model's (0008): the log still names a controller the hub was made to
-- forget (drover remove-controller), and can be filtered by that name.
ALTER TABLE audit_log ADD COLUMN controller_name text NOT NULL DEFAULT '';
UPDATE audit_log SET controller_name = c.name FROM controllers c WHERE c.uuid = audit_log.controller_uuid;
CREATE INDEX audit_log_controller_name ON audit_log (controller_name, at) WHERE controller_name <> '';
