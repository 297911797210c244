package cli

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/droverhq/drover/cli/internal/clientstore"
)

// TestCloudsAtAHub: clouds and regions list where add-model can place a
// model, from the controllers the hub shows: each region with the
// controllers that serve it, a controller without a cloud in localhost.
func TestCloudsAtAHub(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/controllers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"controllers": []map[string]string{
			{"name": "east-b", "cloud": "localhost", "region": "east"},
			{"name": "east-a", "cloud": "localhost", "region": "east"},
			{"name": "west", "region": "west"},
			{"name": "fra", "cloud": "aws", "region": "eu-central-1"},
		}})
	})
	a, out, errb := atFakeHub(t, mux)
	for _, c := range []struct {
		args        []string
		code        int
		out, stderr string
	}{
		{[]string{"clouds"}, 0, `Clouds available on hub "hub":
Cloud      Regions       Controllers
aws        eu-central-1  fra
localhost  east, west    east-a, east-b, west
`, ""},
		{[]string{"regions", "localhost"}, 0, "Region  Controllers\neast    east-a, east-b\nwest    west\n", ""},
		{[]string{"regions", "aws", "--format", "json"}, 0, `{"regions":{"eu-central-1":["fra"]}}` + "\n", ""},
		{[]string{"regions", "gce"}, 1, "", `ERROR cloud "gce" not found on hub "hub" (see 'drover clouds')` + "\n"},
		{[]string{"clouds", "--format", "csv"}, 2, "", `ERROR --format "csv": want one of tabular, json, yaml` + "\n"},
	} {
		out.Reset()
		errb.Reset()
		if code := a.Run(t.Context(), c.args); code != c.code || out.String() != c.out || !strings.HasPrefix(errb.String(), c.stderr) {
			t.Errorf("%q: exit %d\n%s%s\nwant exit %d\n%s%s", c.args, code, out, errb, c.code, c.out, c.stderr)
		}
	}
}

// atFakeHub serves h as a hub over TLS until the test ends, and returns a
// test client logged in to it (the current controller "hub", as
// alice@example.com with the token "tok") and its output buffers.
func atFakeHub(t *testing.T, h http.Handler) (*App, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	a, out, errb := testApp(t)
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	err = (&clientstore.Store{Dir: dir}).Update(func(s *clientstore.State) error {
		s.Controllers["hub"] = &clientstore.ControllerDetails{Hub: true, APIAddresses: []string{strings.TrimPrefix(srv.URL, "https://")},
			CACert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))}
		s.Accounts["hub"] = &clientstore.Account{User: "alice@example.com", Token: "tok"}
		s.CurrentController = "hub"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, out, errb
}
