package user

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDeviceLoginRefusals: when the issuer ends a device login (the code
// expired unapproved, the person denied it, another error), drover says
// what happened in words, not in OAuth error codes.
func TestDeviceLoginRefusals(t *testing.T) {
	for _, c := range []struct {
		answer map[string]string
		says   string
	}{
		{map[string]string{"error": "expired_token"}, "the login code expired before it was approved; run 'drover login' again"},
		{map[string]string{"error": "access_denied"}, "login refused: denied at the identity provider"},
		{map[string]string{"error": "access_denied", "error_description": "user bob@example.com is disabled"}, "login refused: user bob@example.com is disabled"},
		{map[string]string{"error": "invalid_request", "error_description": "Invalid Device code."}, "device login failed: Invalid Device code."},
	} {
		t.Run(c.answer["error"], func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/auth/device", func(w http.ResponseWriter, _ *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
					"verification_uri": "https://idp.example.com/device", "interval": 1})
			})
			mux.HandleFunc("POST /v1/auth/device/token", func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(c.answer)
			})
			srv := httptest.NewTLSServer(mux)
			defer srv.Close()
			a, out, _ := testCommands(t)
			_, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL)
			if err == nil || err.Error() != c.says {
				t.Errorf("got %v, want %q", err, c.says)
			}
			if !strings.Contains(out.String(), "enter the code ABCD-EFGH") {
				t.Errorf("drover did not say where to log in: %q", out)
			}
		})
	}
}

// TestDeviceLoginWaitsOutAnUnavailableHub: a hub that cannot ask its
// issuer or database for a moment while drover polls for the approval is
// waited out (the person may have approved already), said once; one that
// cannot start a device login says why.
func TestDeviceLoginWaitsOutAnUnavailableHub(t *testing.T) {
	const why = "the hub cannot reach its identity provider (try again shortly)"
	var polls atomic.Int32
	startDown := atomic.Bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/device", func(w http.ResponseWriter, _ *http.Request) {
		if startDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"code": "unavailable", "message": why, "error": "temporarily_unavailable", "error_description": why})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
			"verification_uri": "https://idp.example.com/device", "interval": 1})
	})
	mux.HandleFunc("POST /v1/auth/device/token", func(w http.ResponseWriter, _ *http.Request) {
		if polls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "temporarily_unavailable", "error_description": why})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok", "refresh_token": "r", "expires_in": 900})
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	a, _, errb := testCommands(t)
	sess, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL)
	if err != nil || sess.AccessToken != "tok" || polls.Load() != 3 {
		t.Fatalf("device login across an unavailable hub: %+v %v (%d polls)", sess, err, polls.Load())
	}
	if errb.String() != "Still waiting: "+why+"\n" {
		t.Errorf("stderr %q", errb)
	}
	startDown.Store(true)
	if _, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL); err == nil || err.Error() != "login failed: "+why {
		t.Errorf("a device login the hub cannot start: %v", err)
	}
}
