-- Models the hub forgot with their controller (remove-controller --force)
-- while they kept running on it: their organization, name, owner and
-- grants, so that when the controller is registered again the indexer's
-- adoption restores them as they were instead of adopting them owner-less
-- into the controller's organization. Kept 90 days (the janitor).
CREATE TABLE forgotten_models (
    uuid            uuid PRIMARY KEY,
    controller_uuid uuid NOT NULL,
    -- The controller's organization then ('' for a shared controller) and
    -- its CA certificate: a controller registered again by another
    -- organization, or a server claiming its UUID with another CA (which
    -- a registration by then no longer refuses: the UUID is free), adopts
    -- afresh.
    controller_org  text NOT NULL DEFAULT '',
    controller_ca   text NOT NULL,
    org             text NOT NULL,
    name            text NOT NULL,
    owner           uuid REFERENCES identities (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    forgotten_at    timestamptz NOT NULL
);

-- The model's tuples but its structural ones (controller, organization),
-- which adoption writes anyway.
CREATE TABLE forgotten_model_tuples (
    model_uuid uuid NOT NULL REFERENCES forgotten_models (uuid) ON DELETE CASCADE,
    "user"     text NOT NULL,
    relation   text NOT NULL,
    PRIMARY KEY (model_uuid, "user", relation)
);
