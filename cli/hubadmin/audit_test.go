package hubadmin

import "testing"

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
