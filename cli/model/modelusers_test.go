package model

import (
	"bytes"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// TestModelUsersView: show-model's users as Juju lists them, by name, a
// person granted access before their first login "never connected".
func TestModelUsersView(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	seen := now.Add(-3 * time.Hour)
	var out bytes.Buffer
	err := modelcmd.WriteFormatted(&out, "yaml", modelUsersView([]api.ModelUser{
		{Name: "ann@example.com", DisplayName: "Ann", Kind: "user", Access: "admin", LastLogin: &seen},
		{Name: "bob@example.com", Kind: "user", Access: "read"},
		{Name: "ops", Kind: "group", Access: "write"},
		{Name: "everyone", Kind: "everyone", Access: "read"},
	}, now))
	if err != nil {
		t.Fatal(err)
	}
	want := `ann@example.com:
  access: admin
  display-name: Ann
  last-connection: 3 hours ago
bob@example.com:
  access: read
  last-connection: never connected
everyone:
  access: read
  kind: everyone
group ops:
  access: write
  kind: group
`
	if out.String() != want {
		t.Errorf("users:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestFriendlyAgo(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	for ago, want := range map[time.Duration]string{
		10 * time.Second: "just now", time.Minute: "1 minute ago", 59 * time.Minute: "59 minutes ago",
		time.Hour: "1 hour ago", 23 * time.Hour: "23 hours ago", 50 * time.Hour: "2026-11-20",
	} {
		if got := modelcmd.FriendlyAgo(now.Add(-ago), now); got != want {
			t.Errorf("%v ago: %q, want %q", ago, got, want)
		}
	}
}
