package hub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
)

// TestRevokeLeavesTheLevelBelow: revoke works as Juju's. Revoking write
// leaves read, revoking admin leaves write, revoking read removes every
// level; on a controller, revoking superuser leaves add-model.
func TestRevokeLeavesTheLevelBelow(t *testing.T) {
	f := newFixture(t)
	admin := f.token(f.alice, time.Minute, "")
	dave, model := authz.UserObject(f.dave.ID), authz.ModelObject(f.model.UUID)
	change := func(method, level string, target map[string]string) {
		t.Helper()
		body := map[string]string{"user": "dave@example.com", "level": level}
		for k, v := range target {
			body[k] = v
		}
		if code, b := f.do(method, "/v1/grants", admin, body); code != http.StatusNoContent {
			t.Fatalf("%s %s: %d %s", method, level, code, b)
		}
	}
	has := func(rel authz.Relation, object string) bool {
		t.Helper()
		ok, err := f.hub.Authz().Check(t.Context(), dave, rel, object)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	onModel := map[string]string{"model": f.model.UUID}

	change("POST", "write", onModel)
	change("DELETE", "write", onModel)
	if !has(authz.Reader, model) || has(authz.Writer, model) {
		t.Errorf("after revoking write: read %v, write %v; want read only", has(authz.Reader, model), has(authz.Writer, model))
	}
	change("POST", "admin", onModel)
	change("DELETE", "admin", onModel)
	if !has(authz.Writer, model) || has(authz.Administrator, model) {
		t.Errorf("after revoking admin: write %v, admin %v; want write", has(authz.Writer, model), has(authz.Administrator, model))
	}
	change("POST", "admin", onModel)
	change("DELETE", "read", onModel)
	if has(authz.Reader, model) {
		t.Error("after revoking read dave still reads the model")
	}
	if code, _ := f.do("DELETE", "/v1/grants", admin, map[string]string{"user": "dave@example.com", "level": "read", "model": f.model.UUID}); code != http.StatusNotFound {
		t.Errorf("revoking read again: %d, want 404", code)
	}

	ctrl, onCtrl := authz.ControllerObject(f.ctrl.UUID), map[string]string{"controller": f.ctrl.Name}
	change("POST", "superuser", onCtrl)
	change("DELETE", "superuser", onCtrl)
	if !has(authz.CanAddModel, ctrl) || has(authz.Administrator, ctrl) {
		t.Errorf("after revoking superuser: add-model %v, superuser %v", has(authz.CanAddModel, ctrl), has(authz.Administrator, ctrl))
	}
}
