-- The phase of a model's latest migration, on the model's row of the
-- index: a migration's every phase change writes the row, so it takes a
-- new version and the federation stream carries it (the dashboard's
-- migration timeline follows it live). '' for a model never migrated.
ALTER TABLE models ADD COLUMN migration_phase text NOT NULL DEFAULT '';
