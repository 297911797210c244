package agentgw

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/decodecheck"
)

var updateSeeds = flag.Bool("update-seeds", false, "write testdata/fuzz/FuzzRequestBodies from the request types")

// requestBodies is every type an agent's request frame or params decode
// into; a seed's or fuzz input's kind byte picks one. Append only:
// committed seeds name their type by index. Kind 0, the frame itself, is
// decoded leniently (json.Unmarshal in serve); the rest strictly
// (params). TestRequestBodyTableCoversHandlers fails when a decoded type
// is missing here.
var requestBodies = []func() any{
	func() any { return new(agentRequestIn) },
	func() any { return new(api.AgentStatusParams) },
	func() any { return new(api.AgentUnitParams) },
	func() any { return new(api.AgentLeaderParams) },
	func() any { return new(api.AgentScopeParams) },
	func() any { return new(api.AgentHookChanges) },
	func() any { return new(api.AgentReadParams) },
	func() any { return new(api.AgentTaskParams) },
	func() any { return new(api.AgentLogParams) },
	func() any { return new(api.MinionReport) },
}

// decodeBody decodes as the gateway does: the frame with json.Unmarshal
// (serve), params strictly (params) from the frame's params, so a body
// for kind 1 on is a frame's params value.
func decodeBody(kind int) decodecheck.Decoder {
	if kind == 0 {
		return json.Unmarshal
	}
	return func(body []byte, v any) error {
		var req agentRequestIn
		frame := append(append([]byte(`{"params":`), body...), '}')
		if err := json.Unmarshal(frame, &req); err != nil {
			return err
		}
		return params(req.Params, v)
	}
}

// FuzzRequestBodies: decoding a frame or params never panics; what is
// accepted re-encodes to JSON that decodes to an equal value; unknown
// fields are refused in params and ignored in the frame (an agent's
// newer frame fields do not break an older controller).
func FuzzRequestBodies(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		k := int(kind) % len(requestBodies)
		decodecheck.Check(t, decodeBody(k), k != 0, requestBodies[k], body)
	})
}

// TestRequestBodyTableCoversHandlers walks this package's source for
// json.Unmarshal(data, &x), params(raw, &x) and unitParams(c, raw, &x, ...)
// and fails for a decoded type missing from requestBodies (or one listed
// that nothing decodes).
func TestRequestBodyTableCoversHandlers(t *testing.T) {
	sites := decodecheck.DecodedTypes(t, []string{"."}, map[string]int{"json.Unmarshal": 1, "params": 1, "g.unitParams": 2})
	decodecheck.Covered(t, sites, decodecheck.Keys(requestBodies, "github.com/droverhq/drover/spoke/internal/agentgw"))
}

// TestRequestBodySeedsCoverTable fails unless the committed corpus has an
// accepted body for every request type.
func TestRequestBodySeedsCoverTable(t *testing.T) {
	decodecheck.SeedsCover(t, filepath.Join("testdata", "fuzz", "FuzzRequestBodies"), requestBodies, decodeBody, *updateSeeds)
}
