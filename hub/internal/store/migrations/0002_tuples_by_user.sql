-- Model listings find a caller's direct grants by subject (hub/listing.go).
CREATE INDEX authz_tuples_user ON authz_tuples ("user", object);
