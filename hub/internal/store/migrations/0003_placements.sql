-- Models the hub is creating on a controller and has not indexed yet
-- (hub/placement.go). The indexer leaves a model a live claim names to the
-- placement instead of adopting it (store.AdoptModel). A claim outlives a
-- crashed hub only until it expires.
CREATE TABLE placements (
    controller_uuid uuid NOT NULL REFERENCES controllers (uuid) ON DELETE CASCADE,
    name            text NOT NULL,
    spoke_owner     text NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (controller_uuid, name, spoke_owner)
);
