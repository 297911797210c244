package hub

import (
	"bytes"
	"flag"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/internal/decodecheck"
)

var updateSeeds = flag.Bool("update-seeds", false, "write testdata/fuzz/FuzzRequestBodies from the request types")

// requestBodies is every type the hub's handlers (here and in
// internal/authn) decode a body into; a seed's or fuzz input's kind byte
// picks one. Append only: committed seeds name their type by index.
// Anonymous request structs are copied here field for field;
// TestRequestBodyTableCoversHandlers compares the copies with the source.
var requestBodies = []func() any{
	func() any { return new(api.AddModelRequest) },
	func() any { return new(GrantRequest) },
	func() any { return new(SetModelOwnerRequest) },
	func() any { return new(api.RotateSigningKeyRequest) },
	func() any { return new(AddControllerRequest) },
	func() any {
		return new(struct {
			Name string `json:"name"`
		})
	},
	func() any {
		return new(struct {
			Org  string `json:"org"`
			Name string `json:"name"`
		})
	},
	func() any {
		return new(struct {
			User string `json:"user"`
		})
	},
	func() any {
		return new(struct {
			Deprecated *bool `json:"deprecated"`
		})
	},
	func() any {
		return new(struct {
			DeviceCode string `json:"device_code"`
		})
	},
	func() any {
		return new(struct {
			RefreshToken string `json:"refresh_token"`
		})
	},
	func() any { return new(api.MigrateRequest) },
}

// decodeBody decodes as a handler does: reply.Decode, strict.
func decodeBody(body []byte, v any) error {
	return reply.Decode(httptest.NewRequest("POST", "/", bytes.NewReader(body)), v)
}

// FuzzRequestBodies: decoding a body never panics; a body accepted
// re-encodes to JSON that decodes to an equal value; unknown fields are
// refused.
func FuzzRequestBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		decodecheck.Check(t, decodeBody, true, requestBodies[int(kind)%len(requestBodies)], body)
	})
}

// TestRequestBodyTableCoversHandlers walks the source of this package and
// internal/authn for reply.Decode(r, &x) and fails for a decoded type
// missing from requestBodies (or one listed that no handler decodes).
func TestRequestBodyTableCoversHandlers(t *testing.T) {
	sites := decodecheck.DecodedTypes(t, []string{".", filepath.Join("internal", "authn")}, map[string]int{"reply.Decode": 1})
	decodecheck.Covered(t, sites, decodecheck.Keys(requestBodies, "github.com/droverhq/drover/hub"))
}

// TestRequestBodySeedsCoverTable fails unless the committed corpus has an
// accepted body for every request type.
func TestRequestBodySeedsCoverTable(t *testing.T) {
	decodecheck.SeedsCover(t, filepath.Join("testdata", "fuzz", "FuzzRequestBodies"), requestBodies, func(int) decodecheck.Decoder { return decodeBody }, *updateSeeds)
}
