package hub_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/hub/internal/hubtest"
)

// Service accounts of the development issuer used by the tests.
var (
	saAcme   = devidp.Client{ID: "ci-acme", Secret: "acme-secret"}
	saGlobex = devidp.Client{ID: "ci-globex", Secret: "globex-secret"}
	idp      *devidp.Issuer
	// bob is a person of the issuer who never logs in unless a test does.
	bob = [2]string{"bob@example.com", "bob-password"}
)

func TestMain(m *testing.M) {
	var err error
	idp, err = devidp.Start(context.Background(), devidp.Config{
		HubRedirectURIs: []string{"https://hub.test/auth/callback"},
		ServiceAccounts: []devidp.Client{saAcme, saGlobex},
		Users:           map[string]string{devidp.DemoEmail: devidp.DemoPassword, bob[0]: bob[1]},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start dev issuer:", err)
		os.Exit(1)
	}
	code := hubtest.Main(m)
	if err := idp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop dev issuer:", err)
	}
	os.Exit(code)
}
