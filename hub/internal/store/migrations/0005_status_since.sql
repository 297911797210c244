-- When a model's summary status last changed, as the hub saw it: set when
-- the row is inserted and whenever a summary from the controller brings a
-- different status (updateSummary), so `show-model` at a hub says "since"
-- as it does at a controller. NULL for rows indexed before this column:
-- the hub does not know when their status changed. The default applies to
-- new rows only (a volatile default given with ADD COLUMN would fill the
-- existing rows with the migration's time).
ALTER TABLE models ADD COLUMN status_since timestamptz;
ALTER TABLE models ALTER COLUMN status_since SET DEFAULT now();
