package charm

import "testing"

func TestParseBase(t *testing.T) {
	if b, err := ParseBase("ubuntu@24.04"); err != nil || b != (OSBase{"ubuntu", "24.04"}) {
		t.Errorf("ubuntu@24.04: %+v, %v", b, err)
	}
	for _, bad := range []string{"", "ubuntu", "ubuntu@", "@24.04", "jammy", "ubuntu@noble", "Ubuntu@24.04"} {
		if _, err := ParseBase(bad); err == nil {
			t.Errorf("ParseBase(%q) accepted", bad)
		}
	}
}

func TestParseChannel(t *testing.T) {
	for in, want := range map[string]string{
		"stable": "latest/stable", "edge": "latest/edge", "2": "2/stable", "2/edge": "2/edge",
		"latest/candidate/fix-1": "latest/candidate/fix-1", "beta/hotfix": "latest/beta/hotfix",
	} {
		c, err := ParseChannel(in)
		if err != nil || c.String() != want {
			t.Errorf("ParseChannel(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	for _, bad := range []string{"", "2/nightly", "a/b/c/d", "latest//x", "/edge"} {
		if _, err := ParseChannel(bad); err == nil {
			t.Errorf("ParseChannel(%q) accepted", bad)
		}
	}
}
