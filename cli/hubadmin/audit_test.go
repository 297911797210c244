package hubadmin

import (
	"testing"
	"time"
)

// TestAuditTarget: the TARGET column says what an entry acted on, a
// grant's controller or organization included, and never a redacted value.
func TestAuditTarget(t *testing.T) {
	for _, c := range []struct {
		details map[string]any
		want    string
	}{
		{map[string]any{"target": "kvstore/0"}, "kvstore/0"},
		{map[string]any{"body": map[string]any{"user": "bob", "level": "read", "model": "m-uuid"}}, "bob read"},
		{map[string]any{"body": map[string]any{"user": "bob", "level": "add-model", "controller": "east"}}, "bob add-model controller:east"},
		{map[string]any{"body": map[string]any{"group": "acme/ops", "level": "audit_viewer", "organization": "acme"}}, "acme/ops audit_viewer org:acme"},
		{map[string]any{"body": map[string]any{"name": "prod", "controller": "east", "region": "east"}}, "prod"},
		{map[string]any{"body": map[string]any{"user": "[redacted]", "level": "read"}}, "read"},
		{map[string]any{}, "-"},
	} {
		if got := auditTarget(map[string]any{"details": c.details}); got != c.want {
			t.Errorf("auditTarget(%v) = %q, want %q", c.details, got, c.want)
		}
	}
}

// TestAuditFilterQuery: every filter flag reaches GET /v1/audit under the
// parameter the hub reads.
func TestAuditFilterQuery(t *testing.T) {
	f := auditFilter{user: "bob@example.com", model: "prod", forController: "east", operation: "grant",
		after: "1764190000000000_33", org: "acme", result: "denied", text: "ops"}
	q, err := f.query(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "bob@example.com", "model": "prod", "controller": "east", "operation": "grant",
		"after": "1764190000000000_33", "org": "acme", "result": "denied", "q": "ops"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s=%q, want %q (query %s)", k, q.Get(k), v, q.Encode())
		}
	}
	if len(q) != len(want) {
		t.Errorf("query %s, want exactly %v", q.Encode(), want)
	}
}
