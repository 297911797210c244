package embedded_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/droverhq/drover/authz/embedded"
)

// TestSeveralServersInOneProcess starts two servers side by side (Run's
// global tracer and signal handler must not get in the way), checks both
// answer, and that Stop really stops them and may be repeated.
func TestSeveralServersInOneProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var servers []*embedded.Server
	for range 2 {
		s, err := embedded.Start(ctx, embedded.Config{})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	if servers[0].URL() == servers[1].URL() {
		t.Fatalf("both servers on %s", servers[0].URL())
	}
	for _, s := range servers {
		resp, err := http.Get(s.URL() + "/stores")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/stores: %s", s.URL(), resp.Status)
		}
	}
	for _, s := range servers {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if resp, err := http.Get(s.URL() + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatalf("%s still answers after Stop", s.URL())
		}
	}
}

func TestPostgres(t *testing.T) {
	uri := os.Getenv("DROVER_TEST_OPENFGA_POSTGRES")
	if uri == "" {
		t.Skip("DROVER_TEST_OPENFGA_POSTGRES not set")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := embedded.Start(ctx, embedded.Config{Engine: embedded.EnginePostgres, URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := embedded.Start(ctx, embedded.Config{Engine: "mysql"}); err == nil {
		t.Error("unsupported engine accepted")
	}
	if _, err := embedded.Start(ctx, embedded.Config{Engine: embedded.EnginePostgres}); err == nil {
		t.Error("postgres without URI accepted")
	}
	// A postgres server that is not there: Start fails, bounded by
	// StartTimeout, instead of hanging.
	_, err := embedded.Start(ctx, embedded.Config{
		Engine:       embedded.EnginePostgres,
		URI:          "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1",
		StartTimeout: 3 * time.Second,
	})
	if err == nil {
		t.Fatal("start against a missing postgres succeeded")
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("unexpected cancel: %v", err)
	}
}
