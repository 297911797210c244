package apiserver

import (
	"bytes"
	"flag"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/decodecheck"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
)

var updateSeeds = flag.Bool("update-seeds", false, "write testdata/fuzz/FuzzRequestBodies from the request types")

// requestBodies is every type a handler here decodes a body into; a
// seed's or fuzz input's kind byte picks one. Append only: committed
// seeds name their type by index. TestRequestBodyTableCoversHandlers
// fails when a handler decodes a type missing here.
var requestBodies = []func() any{
	func() any { return new(api.IntegrateRequest) },
	func() any { return new(api.JoinTokenRequest) },
	func() any { return new(api.TrustHubRequest) },
	func() any { return new(api.AddModelRequest) },
	func() any { return new(api.ConfigChange) },
	func() any { return new(api.AddMachinesRequest) },
	func() any { return new(api.ResolvedRequest) },
	func() any { return new(api.DeployRequest) },
	func() any { return new(api.AddUnitsRequest) },
	func() any { return new(api.ScaleRequest) },
	func() any { return new(api.ExposeRequest) },
	func() any { return new(api.SetTrustRequest) },
	func() any { return new(api.SetConstraintsRequest) },
	func() any { return new(api.SetCharmRequest) },
	func() any { return new(api.Placement) },
	func() any { return new(api.EnableHARequest) },
	func() any { return new(api.RunActionRequest) },
	func() any { return new(peer.AddVoterRequest) },
	func() any { return new(peer.AdmitRequest) },
	func() any { return new(api.AttachResourcesRequest) },
	func() any { return new(api.SetModelConstraintsRequest) },
	func() any { return new(api.MigrationStepRequest) },
	func() any { return new(api.MigrationPhaseRequest) },
	func() any { return new(api.MigrationPrecheckRequest) },
	func() any { return new(LoginRequest) },
}

// decodeBody decodes as a handler does: reply.Decode, strict.
func decodeBody(body []byte, v any) error {
	r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	return reply.Decode(httptest.NewRecorder(), r, 1<<20, v)
}

// FuzzRequestBodies: decoding a body never panics; a body accepted
// re-encodes to JSON that decodes to an equal value; unknown fields are
// refused.
func FuzzRequestBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		decodecheck.Check(t, decodeBody, true, requestBodies[int(kind)%len(requestBodies)], body)
	})
}

// TestRequestBodyTableCoversHandlers walks this package's source for
// reply.Decode(w, r, max, &x), decodeForApp(w, r, &x), decodeKeyed(w, r, &x, id) and
// appRequest(..., func(req T)) and fails
// for a decoded type missing from requestBodies (or one listed that no
// handler decodes).
func TestRequestBodyTableCoversHandlers(t *testing.T) {
	sites := decodecheck.DecodedTypes(t, []string{"."}, map[string]int{"reply.Decode": 3, "appRequest": 4, "s.decodeForApp": 2, "s.decodeKeyed": 2})
	decodecheck.Covered(t, sites, decodecheck.Keys(requestBodies, "github.com/droverhq/drover/spoke/internal/apiserver"))
}

// TestRequestBodySeedsCoverTable fails unless the committed corpus has an
// accepted body for every request type.
func TestRequestBodySeedsCoverTable(t *testing.T) {
	decodecheck.SeedsCover(t, filepath.Join("testdata", "fuzz", "FuzzRequestBodies"), requestBodies, func(int) decodecheck.Decoder { return decodeBody }, *updateSeeds)
}
