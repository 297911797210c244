package authz_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/authz/embedded"
)

// fgaURL is the one embedded OpenFGA server this test binary shares; every
// test gets its own store on it, so tests stay independent and cheap.
var fgaURL string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cfg := embedded.Config{}
	// DROVER_TEST_OPENFGA_POSTGRES=postgres://... runs the suite against
	// the postgres datastore instead of memory.
	if uri := os.Getenv("DROVER_TEST_OPENFGA_POSTGRES"); uri != "" {
		cfg.Engine, cfg.URI = embedded.EnginePostgres, uri
	}
	srv, err := embedded.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded openfga:", err)
		return 1
	}
	fgaURL = srv.URL()
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop embedded openfga:", err)
		return 1
	}
	return code
}

var storeSeq atomic.Int64

// newClient returns a client on a fresh store of the shared server.
func newClient(t *testing.T) *authz.Client {
	t.Helper()
	ctx := testContext(t)
	name := fmt.Sprintf("test-%d-%d", os.Getpid(), storeSeq.Add(1))
	c, err := authz.New(ctx, fgaURL, name)
	if err != nil {
		t.Fatalf("authz.New(%q): %v", name, err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
