package user

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// groupsFixture is the hub's answer the group tests print (as in the
// root package's tests of the commands).
var groupsFixture = []api.Group{
	{ID: "0b6c3c1e-6a43-4e0c-9f2a-5b1f3a8d7e01", Org: "acme", Name: "ops", CreatedAt: time.Date(2026, 11, 2, 9, 30, 5, 123e6, time.UTC), MemberCount: 12},
	{ID: "5d0e6f3a-1c2b-4e5f-8a9b-0c1d2e3f4a5b", Org: "globex", Name: "sre.oncall", CreatedAt: time.Date(2026, 11, 20, 18, 4, 0, 0, time.FixedZone("CET", 3600)), MemberCount: 3},
}

// TestPrintGroups: the table reads by organization with counts aligned to
// the right and times to the second in UTC; no groups say so on stderr in
// the table and are an empty list in JSON and YAML.
func TestPrintGroups(t *testing.T) {
	var out, errb bytes.Buffer
	a := &Commands{Env: &modelcmd.Env{Stdout: &out, Stderr: &errb}}
	if err := a.printGroups(groupsFixture, "tabular"); err != nil {
		t.Fatal(err)
	}
	want := `Org     Name        Members  Created
acme    ops              12  2026-11-02 09:30:05Z
globex  sre.oncall        3  2026-11-20 17:04:00Z
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	if err := a.printGroups(groupsFixture, "json"); err != nil {
		t.Fatal(err)
	}
	var back struct{ Groups []api.Group }
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back.Groups) != 2 || back.Groups[1].Name != "sre.oncall" ||
		back.Groups[0].MemberCount != 12 || !back.Groups[1].CreatedAt.Equal(groupsFixture[1].CreatedAt) {
		t.Errorf("json %s: %v", out.String(), err)
	}

	out.Reset()
	if err := a.printGroups(groupsFixture[:1], "yaml"); err != nil {
		t.Fatal(err)
	}
	want = `groups:
  - id: 0b6c3c1e-6a43-4e0c-9f2a-5b1f3a8d7e01
    org: acme
    name: ops
    created-at: "2026-11-02T09:30:05.123Z"
    member-count: 12
`
	if out.String() != want {
		t.Errorf("yaml:\n%s\nwant\n%s", out.String(), want)
	}

	for format, want := range map[string]string{"tabular": "", "json": `{"groups":[]}` + "\n", "yaml": "groups: []\n"} {
		out.Reset()
		errb.Reset()
		if err := a.printGroups(nil, format); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("no groups, %s: %q, want %q", format, out.String(), want)
		}
		if said := errb.String(); (format == "tabular") != (said == "No groups to display.\n") {
			t.Errorf("no groups, %s: stderr %q", format, said)
		}
	}
}

// TestGroupView: show-group keys the group by ORG/NAME and lists its
// members and grants, empty lists included.
func TestGroupView(t *testing.T) {
	d := api.GroupDetails{Group: groupsFixture[0],
		Members: []api.GroupMember{{Name: "bob@example.com", Kind: "user"}, {Name: "ci-deployer", Kind: "service-account"}},
		Grants: []api.GroupGrant{
			{Level: "read", Target: "model prod", Object: "model:7f0c8c5e-2d5e-4a36-a1a4-7d3f5f2b9c10"},
			{Level: "audit_viewer", Target: "organization acme", Object: "organization:acme"},
		}}
	var out bytes.Buffer
	if err := modelcmd.WriteFormatted(&out, "yaml", groupView(d)); err != nil {
		t.Fatal(err)
	}
	want := `acme/ops:
  id: 0b6c3c1e-6a43-4e0c-9f2a-5b1f3a8d7e01
  org: acme
  name: ops
  created-at: "2026-11-02T09:30:05.123Z"
  member-count: 12
  members:
    - name: bob@example.com
      kind: user
    - name: ci-deployer
      kind: service-account
  grants:
    - level: read
      target: model prod
      object: model:7f0c8c5e-2d5e-4a36-a1a4-7d3f5f2b9c10
    - level: audit_viewer
      target: organization acme
      object: organization:acme
`
	if out.String() != want {
		t.Errorf("yaml:\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	empty := api.GroupDetails{Group: api.Group{Org: "acme", Name: "new"}}
	if err := modelcmd.WriteFormatted(&out, "json", groupView(empty)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, `{"acme/new":{`) || !strings.Contains(got, `"members":[],"grants":[]`) {
		t.Errorf("an empty group as json: %s", got)
	}
}
