-- Hub schema, version 1. Migrations are append-only: never edit a released
-- file, add the next number instead.

CREATE TABLE organizations (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- People and service accounts. A person is (issuer, subject) from an OIDC
-- ID token; a service account is the subject of a client-credentials token.
CREATE TABLE identities (
    id           uuid PRIMARY KEY,
    issuer       text NOT NULL,
    subject      text NOT NULL,
    kind         text NOT NULL DEFAULT 'user' CHECK (kind IN ('user', 'service-account')),
    email        text NOT NULL DEFAULT '',
    display_name text NOT NULL DEFAULT '',
    org          text NOT NULL REFERENCES organizations (name),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_login   timestamptz,
    UNIQUE (issuer, subject)
);
CREATE INDEX identities_email ON identities (email);

CREATE TABLE groups (
    id         uuid PRIMARY KEY,
    org        text NOT NULL REFERENCES organizations (name),
    name       text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org, name)
);

CREATE TABLE group_members (
    group_id    uuid NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    added_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, identity_id)
);

-- OAuth clients allowed to log in with client credentials, each bound to
-- one organization.
CREATE TABLE service_accounts (
    client_id    text PRIMARY KEY,
    org          text NOT NULL REFERENCES organizations (name),
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Spokes. org NULL means a shared controller (linked to the hub).
CREATE TABLE controllers (
    uuid          uuid PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    org           text REFERENCES organizations (name),
    region        text NOT NULL DEFAULT '',
    cloud         text NOT NULL DEFAULT '',
    api_addresses text[] NOT NULL DEFAULT '{}',
    ca_cert       text NOT NULL DEFAULT '',
    status        text NOT NULL DEFAULT 'unknown',
    health        jsonb NOT NULL DEFAULT '{}',
    event_index   bigint NOT NULL DEFAULT 0,
    last_seen     timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX controllers_region ON controllers (region);

-- The model index, kept current from each spoke's event stream.
CREATE TABLE models (
    uuid              uuid PRIMARY KEY,
    name              text NOT NULL,
    org               text NOT NULL REFERENCES organizations (name),
    owner             uuid REFERENCES identities (id),
    controller_uuid   uuid NOT NULL REFERENCES controllers (uuid),
    life              text NOT NULL DEFAULT 'alive',
    status            text NOT NULL DEFAULT '',
    application_count integer NOT NULL DEFAULT 0,
    unit_count        integer NOT NULL DEFAULT 0,
    machine_count     integer NOT NULL DEFAULT 0,
    event_index       bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org, name)
);
CREATE INDEX models_controller ON models (controller_uuid);

-- The OpenFGA tuples the hub expects to exist: the source of truth the
-- reconciler compares OpenFGA against. Changed only together with an
-- authz_outbox row in the same transaction.
CREATE TABLE authz_tuples (
    "user"     text NOT NULL,
    relation   text NOT NULL,
    object     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (object, relation, "user")
);

CREATE TABLE authz_outbox (
    id           bigserial PRIMARY KEY,
    op           text NOT NULL CHECK (op IN ('write', 'delete')),
    "user"       text NOT NULL,
    relation     text NOT NULL,
    object       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text NOT NULL DEFAULT ''
);
CREATE INDEX authz_outbox_pending ON authz_outbox (id) WHERE delivered_at IS NULL;

CREATE TABLE audit_log (
    id              bigserial PRIMARY KEY,
    at              timestamptz NOT NULL,
    identity_id     uuid,
    actor           text NOT NULL DEFAULT '',
    org             text NOT NULL DEFAULT '',
    operation       text NOT NULL,
    method          text NOT NULL DEFAULT '',
    path            text NOT NULL DEFAULT '',
    model_uuid      uuid,
    controller_uuid uuid,
    status          integer NOT NULL DEFAULT 0,
    result          text NOT NULL CHECK (result IN ('ok', 'denied', 'error')),
    details         jsonb NOT NULL DEFAULT '{}',
    remote_addr     text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at, id);
CREATE INDEX audit_log_identity ON audit_log (identity_id, at);
CREATE INDEX audit_log_model ON audit_log (model_uuid, at);
CREATE INDEX audit_log_controller ON audit_log (controller_uuid, at);
CREATE INDEX audit_log_org ON audit_log (org, at);

-- Refresh tokens, stored as SHA-256 hashes; rotated on every use.
CREATE TABLE sessions (
    id           uuid PRIMARY KEY,
    identity_id  uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    refresh_hash bytea NOT NULL UNIQUE,
    client       text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX sessions_identity ON sessions (identity_id);

-- Pending browser logins (authorization code + PKCE), so any hub replica can
-- finish a login another one started.
CREATE TABLE web_logins (
    state      text PRIMARY KEY,
    verifier   text NOT NULL,
    nonce      text NOT NULL,
    return_to  text NOT NULL DEFAULT '/',
    expires_at timestamptz NOT NULL
);

-- The hub's JWT signing keys. The newest unretired key signs; every key not
-- retired longer than the token lifetime is published in the JWKS.
CREATE TABLE signing_keys (
    kid         text PRIMARY KEY,
    alg         text NOT NULL,
    private_pem text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);
