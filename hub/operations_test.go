package hub

import (
	"encoding/json"
	"testing"
)

// TestModelOperations: model requests are audited under the Juju command
// that makes them, with the entity they act on.
func TestModelOperations(t *testing.T) {
	for _, c := range []struct {
		method, rest string
		body         string
		op, target   string
	}{
		{"DELETE", "", "", "destroy-model", ""},
		{"DELETE", "/", "", "destroy-model", ""},
		{"PATCH", "/config", `{"set":{"a":1}}`, "model-config", ""},
		{"POST", "/constraints", `{"constraints":"mem=4G"}`, "set-model-constraints", ""},
		{"POST", "/charms", "", "add-charm", ""},
		{"POST", "/resource-blobs", "", "upload-resource", ""},
		{"POST", "/applications/web/resources", `{"resources":{}}`, "attach-resource", "web"},
		{"POST", "/applications", `{"application":"kv","num-units":2}`, "deploy", "kv"},
		{"DELETE", "/applications/kv", "", "remove-application", "kv"},
		{"PATCH", "/applications/kv/config", `{"set":{"port":1}}`, "config", "kv"},
		{"POST", "/applications/kv/units", `{"num-units":1}`, "add-unit", "kv"},
		{"POST", "/applications/kv/scale", `{"scale":3}`, "scale", "kv"},
		{"POST", "/applications/kv/expose", `{"exposed":true}`, "expose", "kv"},
		{"POST", "/applications/kv/expose", `{"exposed":false}`, "unexpose", "kv"},
		{"POST", "/applications/kv/charm", `{"charm-sha256":"ab"}`, "refresh", "kv"},
		{"DELETE", "/units/kv/0", "", "remove-unit", "kv/0"},
		{"POST", "/units/kv/0/resolved", `{}`, "resolved", "kv/0"},
		{"DELETE", "/machines/3", "", "remove-machine", "3"},
		{"POST", "/relations", `{"endpoints":["web:db","kv:kv"]}`, "integrate", "web:db kv:kv"},
		{"DELETE", "/relations/4", "", "remove-relation", "4"},
		{"POST", "/actions", `{"action":"get","receivers":["kv/0","kv/1"]}`, "run", "get kv/0 kv/1"},
		{"POST", "/actions", `{"action":"get"}`, "run", "get"},
		{"POST", "/tasks/7/cancel", ``, "cancel-task", "7"},
		{"POST", "/machines", `{"num-machines":2}`, "add-machine", ""},
		{"POST", "/applications/kv/constraints", `{"constraints":"mem=4G"}`, "set-constraints", "kv"},
		{"POST", "/applications/kv/trust", `{"trust":true}`, "trust", "kv"},
		{"POST", "/actions", `{"action":"juju-exec","receivers":["kv/0","web/1"],"params":{"command":"hostname"}}`, "exec", "kv/0 web/1"},
		{"POST", "/applications/kv/somethingnew", "", "model POST applications/kv/somethingnew", ""},
		{"PUT", "/config", "", "model PUT config", ""},
	} {
		op, target := modelOperation(c.method, c.rest, jsonObject([]byte(c.body)))
		if op != c.op || target != c.target {
			t.Errorf("%s %q %s: got %q %q, want %q %q", c.method, c.rest, c.body, op, target, c.op, c.target)
		}
	}
}

// TestRedact: only allow-listed fields keep their values; settings and
// action parameters keep their names; anything else, at any depth, is
// "[redacted]".
func TestRedact(t *testing.T) {
	body := jsonObject([]byte(`{"application":"kv","config":{"password":"hunter2"},"params":{"key":"k"},
		"client-secret":"s3cret","user":"bob@example.com","set":"not-an-object","credential":{"token":"t"}}`))
	b, _ := json.Marshal(redact(body))
	want := `{"application":"kv","client-secret":"[redacted]","config":{"password":"[redacted]"},` +
		`"credential":"[redacted]","params":{"key":"[redacted]"},"set":"[redacted]","user":"bob@example.com"}`
	if string(b) != want {
		t.Fatalf("redacted:\n%s\nwant\n%s", b, want)
	}
	// What refresh, trust, add-machine and exec say is recorded, but for
	// exec's command (a parameter: its key only).
	b, _ = json.Marshal(redact(jsonObject([]byte(`{"charm-sha256":"ab","switch":true,"force-units":true,"trust":false,"num-machines":2,
		"action":"juju-exec","params":{"command":"cat /etc/shadow"}}`))))
	want = `{"action":"juju-exec","charm-sha256":"ab","force-units":true,"num-machines":2,"params":{"command":"[redacted]"},"switch":true,"trust":false}`
	if string(b) != want {
		t.Fatalf("redacted:\n%s\nwant\n%s", b, want)
	}
	if redact(jsonObject([]byte("not json"))) != nil || redact(jsonObject([]byte(`["a"]`))) != nil {
		t.Fatal("a body that is not a JSON object is not recorded")
	}
}
