package hub_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestRevokingTheSigningKeys: a hub administrator rotates the signing key
// and revokes the previous one, as after a leak. On every replica, at once
// (not at the next minute's refresh), sessions signed with the revoked key
// are refused, while the new key's sessions work there, through to the
// controller, which learns the new key by itself. Nobody else may see or
// rotate the keys, and the audit log records who did.
func TestRevokingTheSigningKeys(t *testing.T) {
	f := newProxyFixture(t)
	a, b := f.env, f.env.replica()
	root := a.hubAdmin()
	status := "/v1/models/" + f.model + "/status"
	before := a.token(f.alice, 5*time.Minute, "")
	replicas := []struct {
		name string
		*env
	}{{"first", a}, {"second", b}}
	for _, e := range replicas {
		// Both replicas hand the controller tokens signed with the key
		// that is about to be revoked, and the controller accepts them.
		e.want(t, "status through the "+e.name+" replica before the rotation", http.StatusOK, before, http.MethodGet, status, nil)
	}

	for _, tok := range []string{before, a.token(f.olga, time.Minute, "")} {
		a.want(t, "listing the keys as a non-administrator", http.StatusForbidden, tok, http.MethodGet, "/v1/hub/signing-keys", nil)
		a.want(t, "rotating as a non-administrator", http.StatusForbidden, tok, http.MethodPost, "/v1/hub/signing-keys",
			api.RotateSigningKeyRequest{RevokePrevious: true})
	}
	var listed struct{ Keys []api.SigningKey }
	if err := json.Unmarshal(a.want(t, "list", http.StatusOK, root, http.MethodGet, "/v1/hub/signing-keys", nil), &listed); err != nil ||
		len(listed.Keys) != 1 || !listed.Keys[0].Current || listed.Keys[0].SealedWith != "" {
		t.Fatalf("keys before the rotation: %+v %v", listed.Keys, err)
	}
	old := listed.Keys[0].KID

	var res api.RotateSigningKeyResult
	if err := json.Unmarshal(a.want(t, "rotate", http.StatusCreated, root, http.MethodPost, "/v1/hub/signing-keys",
		api.RotateSigningKeyRequest{RevokePrevious: true}), &res); err != nil || res.Current == old || !slices.Equal(res.Revoked, []string{old}) {
		t.Fatalf("rotation: %+v %v", res, err)
	}
	a.want(t, "a session of the revoked key, where it was revoked", http.StatusUnauthorized, before, http.MethodGet, "/v1/whoami", nil)
	testkit.EventuallyWithin(t, 5*time.Second, func() (bool, error) {
		code, _ := b.do(http.MethodGet, "/v1/whoami", before, nil)
		return code == http.StatusUnauthorized, nil
	}, "the other replica refuses the revoked key's session")

	after := a.token(f.alice, 5*time.Minute, "")
	for _, e := range replicas {
		e.want(t, "status through the "+e.name+" replica after the rotation", http.StatusOK, after, http.MethodGet, status, nil)
	}
	root = a.hubAdmin()
	if err := json.Unmarshal(b.want(t, "list after", http.StatusOK, root, http.MethodGet, "/v1/hub/signing-keys", nil), &listed); err != nil ||
		len(listed.Keys) != 1 || listed.Keys[0].KID != res.Current {
		t.Errorf("keys after the rotation, as the other replica sees them: %+v %v", listed.Keys, err)
	}
	// The rotation, the two refused attempts before it, and the hub's
	// first key, made by itself at its first start.
	rows := a.auditCSV(root, "operation=rotate-signing-key", 5)
	if line := strings.Join(rows[4], ","); !strings.Contains(line, ",hub,") || !strings.Contains(line, `"first":true`) {
		t.Errorf("audit of the first key: %q", rows[4])
	}
	if line := strings.Join(rows[1], ","); !strings.Contains(line, "root@example.com") || !strings.Contains(line, ",ok,") ||
		!strings.Contains(line, res.Current) || !strings.Contains(line, old) || !strings.Contains(line, "revoke-previous") {
		t.Errorf("audit of the rotation: %q", rows[1])
	}
	for _, r := range rows[2:4] {
		if line := strings.Join(r, ","); !strings.Contains(line, ",denied,") {
			t.Errorf("audit of a refused rotation: %q", r)
		}
	}

	// Rotating without revoking keeps the previous key's sessions good.
	a.want(t, "rotate again", http.StatusCreated, root, http.MethodPost, "/v1/hub/signing-keys", nil)
	b.want(t, "a session of the previous key after a plain rotation", http.StatusOK, root, http.MethodGet, "/v1/whoami", nil)
}
