-- A model name an add-model through the hub is placing in an organization
-- (hub/placement.go): racing add-models of one name lose here, before any
-- controller creates a model only to have it removed again. A claim
-- outlives a crashed hub only until it expires.
CREATE TABLE model_name_claims (
    org        text NOT NULL,
    name       text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (org, name)
);
