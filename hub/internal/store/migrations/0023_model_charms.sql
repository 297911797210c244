-- The charms a model's applications run, from its controller's summaries
-- (api.ModelSummary.Charms): one object an application, with its charm's
-- name, revision, archive sha256 and unit count, for the hub's
-- compliance views (GET /v1/compliance/charms). Not part of a model's
-- listing.
ALTER TABLE models ADD COLUMN charms jsonb NOT NULL DEFAULT '[]';
