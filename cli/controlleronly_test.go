package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/droverhq/drover/cli/internal/clientstore"
)

// TestControllerCommandsAtAHub: the commands that only a controller serves
// refuse a hub with what to run instead, and send it nothing (posted to
// the hub, enable-ha would print its bare 404).
func TestControllerCommandsAtAHub(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	a, out, errb := atFakeHub(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	for _, c := range [][]string{{"enable-ha"}, {"enable-ha", "-n", "5", "-c", "hub"}, {"create-hub-token"}, {"remove-hub-trust", "-y"}} {
		out.Reset()
		errb.Reset()
		want := `ERROR "hub" is a hub: run '` + c[0] + `' against the controller itself (-c CONTROLLER)` + "\n"
		if code := a.Run(t.Context(), c); code != 1 || out.Len() != 0 || errb.String() != want {
			t.Errorf("%q: exit %d\n%s%s\nwant exit 1\n%s", c, code, out, errb, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Errorf("sent to the hub: %s", strings.Join(sent, ", "))
	}
}

// TestCreateHubTokenSaysWhatToRunOnTheHub: the hint names the controller's
// CA file when it was bootstrapped here, and says where to find the CA
// otherwise.
func TestCreateHubTokenSaysWhatToRunOnTheHub(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/controller/hub-tokens", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"token":"drv1.tok","expires":"2026-11-22T20:00:00Z"}`)
	})
	a, out, errb := atFakeHub(t, mux)
	dataDir := t.TempDir()
	setDetails := func(dir string) {
		t.Helper()
		storeDir, err := clientstore.DefaultStoreDir(a.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		if err := (&clientstore.Store{Dir: storeDir}).Update(func(s *clientstore.State) error {
			s.Controllers["hub"].Hub, s.Controllers["hub"].DataDir = false, dir
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dataDir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "tls", "ca.crt"), []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, want, notWant string
	}{
		{dataDir, "--ca " + filepath.Join(dataDir, "tls", "ca.crt") + " --region", "CONTROLLER_CA"},
		{"", "--ca CONTROLLER_CA --region REGION --join-token TOKEN\n(CONTROLLER_CA: a file with the controller's CA certificate, the ca-cert of 'drover show-controller hub')", "tls"},
	} {
		setDetails(c.dir)
		out.Reset()
		errb.Reset()
		if code := a.Run(t.Context(), []string{"create-hub-token"}); code != 0 || out.String() != "drv1.tok\n" ||
			!strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), c.notWant) {
			t.Errorf("data dir %q: exit %d\n%s%s\nwant the token, and %q", c.dir, code, out, errb, c.want)
		}
	}
}
