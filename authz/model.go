// Package authz holds Drover's OpenFGA authorization model and the typed
// client the hub uses to check and change permissions.
//
// Invariants:
//   - model.fga is the single source of truth for the model; it is embedded
//     in the binary and transformed to the API's JSON form at run time, so
//     the model a binary writes is always the one it was built and tested
//     with.
//   - Object and user strings are built only through the helpers in
//     object.go ("model:<uuid>", "group:<name>#member", ...), never by hand.
//   - Client.Write is idempotent: writing a tuple that exists or deleting one
//     that does not is not an error, so the hub's outbox worker may retry.
package authz

import (
	_ "embed"
	"fmt"
	"sync"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"github.com/openfga/language/pkg/go/transformer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ModelDSL is the authorization model in OpenFGA DSL (schema 1.1).
//
//go:embed model.fga
var ModelDSL string

var parsed = sync.OnceValues(func() (*openfgav1.AuthorizationModel, error) {
	m, err := transformer.TransformDSLToProto(ModelDSL)
	if err != nil {
		return nil, fmt.Errorf("authz: parse model.fga: %w", err)
	}
	return m, nil
})

// ModelProto returns a fresh copy of the parsed authorization model.
func ModelProto() (*openfgav1.AuthorizationModel, error) {
	m, err := parsed()
	if err != nil {
		return nil, err
	}
	return proto.Clone(m).(*openfgav1.AuthorizationModel), nil
}

// ModelJSON returns the authorization model in the JSON form accepted by
// OpenFGA's WriteAuthorizationModel endpoint (and by `fga model write`).
func ModelJSON() ([]byte, error) {
	m, err := parsed()
	if err != nil {
		return nil, err
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("authz: marshal model: %w", err)
	}
	return b, nil
}

// sameModel reports whether two models define the same schema, types and
// conditions, ignoring the server-assigned id.
func sameModel(a, b *openfgav1.AuthorizationModel) bool {
	a = proto.Clone(a).(*openfgav1.AuthorizationModel)
	b = proto.Clone(b).(*openfgav1.AuthorizationModel)
	a.Id, b.Id = "", ""
	return proto.Equal(a, b)
}
