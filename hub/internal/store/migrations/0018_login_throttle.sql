-- Login throttling shared by the hub's replicas: one token bucket per
-- kind (failed logins, login starts) and client address (an IPv4 address
-- or an IPv6 /64, as text). tokens may go below zero when replicas charge
-- at once; refills are counted from at. Rows whose bucket is full again
-- are pruned.
CREATE TABLE login_throttle (
    kind   text NOT NULL,
    addr   text NOT NULL,
    tokens double precision NOT NULL,
    at     timestamptz NOT NULL,
    PRIMARY KEY (kind, addr)
);
