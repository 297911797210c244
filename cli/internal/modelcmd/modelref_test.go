package modelcmd

import (
	"testing"

	"github.com/droverhq/drover/api"
)

// TestPickModel: names resolve as in Juju. A name several owners use means
// the caller's own model, OWNER/NAME another's; the client names others'
// models OWNER/NAME, so that remembering one (the current model) keeps
// meaning it.
func TestPickModel(t *testing.T) {
	models := []api.Model{
		{UUID: "u1", Name: "prod", Owner: "alice"},
		{UUID: "u2", Name: "prod", Owner: "bob"},
		{UUID: "u3", Name: "dev", Owner: "bob"},
		{UUID: "u4", Name: "ops", Owner: "carol"},
		{UUID: "u5", Name: "ops", Owner: "dave"},
	}
	for _, c := range []struct{ ref, user, want, err string }{
		{"prod", "alice", "u1", ""},
		{"prod", "bob", "u2", ""},
		{"bob/prod", "alice", "u2", ""},
		{"dev", "alice", "u3", ""},
		{"u4", "alice", "u4", ""},
		{"ops", "alice", "", `model name "ops" is ambiguous; name it as OWNER/ops`},
		{"carol/ops", "alice", "u4", ""},
		{"nope", "alice", "", ""},
	} {
		m, err := PickModel(models, c.ref, c.user)
		got := ""
		if m != nil {
			got = m.UUID
		}
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%s as %s: %q %v, want %q %q", c.ref, c.user, got, err, c.want, c.err)
		}
		if m != nil {
			if again, _ := PickModel(models, ModelRef(*m, c.user), c.user); again == nil || again.UUID != m.UUID {
				t.Errorf("%s as %s: its ref %q names %+v", c.ref, c.user, ModelRef(*m, c.user), again)
			}
		}
	}
}
