-- A deprecated controller takes no new models (drover
-- set-controller-deprecated, as jimmctl's): placement passes it over, and
-- add-model naming it is refused, while its models go on as before. For
-- draining a controller before it is retired.
ALTER TABLE controllers ADD COLUMN deprecated boolean NOT NULL DEFAULT false;
