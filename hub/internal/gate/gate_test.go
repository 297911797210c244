package gate

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
)

// TestLevelOf: a refusal names the access level as drover grant does, on
// each type of object; a relation no level maps to is named as itself.
func TestLevelOf(t *testing.T) {
	for _, c := range []struct {
		object string
		rel    authz.Relation
		want   string
	}{
		{authz.ModelObject("m"), authz.Writer, "write"},
		{authz.ModelObject("m"), authz.Administrator, "admin"},
		{authz.ControllerObject("c"), authz.Administrator, "superuser"},
		{authz.ControllerObject("c"), authz.Reader, "login"},
		{authz.OrgObject("acme"), authz.Member, "member"},
		{authz.HubObject(), authz.Administrator, string(authz.Administrator)},
	} {
		if got := LevelOf(c.object, c.rel); got != c.want {
			t.Errorf("LevelOf(%s, %s) = %q, want %q", c.object, c.rel, got, c.want)
		}
	}
}

// TestLevelsAreUnambiguous: within a type, no two levels name the same
// relation (LevelOf could then answer either).
func TestLevelsAreUnambiguous(t *testing.T) {
	for typ, ls := range Levels {
		seen := map[authz.Relation]string{}
		for name, l := range ls {
			if other, ok := seen[l.Rel]; ok {
				t.Errorf("%s: %s and %s are both %s", typ, name, other, l.Rel)
			}
			seen[l.Rel] = name
		}
	}
}

func TestIDs(t *testing.T) {
	got := IDs([]string{authz.ModelObject("a"), "junk", authz.ControllerObject("b")})
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("IDs = %v", got)
	}
}

// TestNewRefusesAnIncompleteConfig: a gate without its dependencies or
// hooks is refused at construction, not at its first request.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := New(Config{TTL: time.Second}); err == nil {
		t.Fatal("New accepted a Config without Authz, Store and hooks")
	}
}
