-- An audit entry is written before the request it records is served, as
-- 'pending', and completed with the request's result: a change the hub
-- could not record is not made.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_result_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_result_check CHECK (result IN ('ok', 'denied', 'error', 'pending'));
