// Package modelcmdtest is what the command packages' tests share: an Env
// with captured output, a fixed clock and a client store in a temporary
// directory; fake hubs and controllers to point it at; and golden files.
// Only tests import it.
package modelcmdtest

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with testdata/name, or rewrites it with -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test with -update if intended)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Now is the test clock.
func Now() time.Time { return time.Date(2026, 11, 21, 21, 33, 10, 0, time.UTC) }

// NewEnv is an Env with captured output, the test clock and a client
// store in a temporary directory (DROVER_DATA).
func NewEnv(t *testing.T) (*modelcmd.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	e := &modelcmd.Env{
		Stdin: bytes.NewReader(nil), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "DROVER_DATA" {
				return dir
			}
			return ""
		},
		Now:   Now,
		Store: &clientstore.Store{Dir: dir},
	}
	return e, &out, &errb
}

// AtFakeHub serves h as a hub over TLS until the test ends, and returns an
// Env logged in to it (the current controller "hub", as
// alice@example.com with the token "tok") and its output buffers.
func AtFakeHub(t *testing.T, h http.Handler) (*modelcmd.Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	e, out, errb := NewEnv(t)
	err := e.Store.Update(func(s *clientstore.State) error {
		s.Controllers["hub"] = &clientstore.ControllerDetails{Hub: true, APIAddresses: []string{strings.TrimPrefix(srv.URL, "https://")},
			CACert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))}
		s.Accounts["hub"] = &clientstore.Account{User: "alice@example.com", Token: "tok"}
		s.CurrentController = "hub"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, out, errb
}

// AtFakeModel serves h as a controller over TLS until the test ends, and
// returns an Env and a connection to model uuid ("m") on it.
func AtFakeModel(t *testing.T, h http.Handler, uuid string) (*modelcmd.Env, *bytes.Buffer, *bytes.Buffer, *modelcmd.ModelConn) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{strings.TrimPrefix(srv.URL, "https://")}, CACert: ca,
		User: "admin", Password: "x", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	e, out, errb := NewEnv(t)
	return e, out, errb, &modelcmd.ModelConn{Conn: &modelcmd.Conn{Name: "c", Details: &clientstore.ControllerDetails{}, Account: &clientstore.Account{}, Client: cl}, Model: "m", UUID: uuid}
}

// AnswerError answers as a controller or hub does when it refuses: status,
// and an api.Error body.
func AnswerError(w http.ResponseWriter, status int, code api.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Code: code, Message: msg})
}
