package spoke

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/droverhq/drover/tests/testkit"
)

// TestMetricsOnAnInternalAddress (issue 26, finding 12): with
// MetricsListen (droverd spoke --metrics-listen) a node serves its metrics
// there, over plain HTTP, to a scraper on another machine, and the API
// address answers /metrics 404 even to the machine itself.
func TestMetricsOnAnInternalAddress(t *testing.T) {
	internal := testkit.FreeAddr(t)
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.MetricsListen = internal })
	resp, err := http.Get("http://" + internal + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("drover_api_requests_total")) {
		t.Fatalf("/metrics at the internal address: %d %.100s", resp.StatusCode, b)
	}
	if resp, err := http.Get("http://" + internal + "/healthz"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another path at the internal address: %v %v", resp, err)
	}
	resp, err = c.rawClient().Get("https://" + c.nodes[0].cfg.Listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics at the API address with --metrics-listen: %d", resp.StatusCode)
	}
}
