package main

import (
	"strings"
	"testing"
)

// TestDevSummaryNamesTheDashboardAndItsPeople: what `make dev` prints
// starts with the dashboard's URL and every person of the dev issuer.
func TestDevSummaryNamesTheDashboardAndItsPeople(t *testing.T) {
	info := DevInfo{HubURL: "https://127.0.0.1:17080", DashboardURL: "https://127.0.0.1:17080/",
		User:            DevUser{Email: "demo@example.com", Password: "pw-demo", Org: "demo"},
		Reader:          DevUser{Email: "reader@example.com", Password: "pw-reader", Org: "demo"},
		OtherOrgUser:    DevUser{Email: "other@globex.example", Password: "pw-other", Org: "globex"},
		ServiceAccounts: []DevServiceAcct{{ClientID: "ci-demo", ClientSecret: "s", Org: "demo"}},
		Controllers:     []DevController{{URL: "https://127.0.0.1:17070"}, {URL: "https://127.0.0.1:17072"}}}
	var out strings.Builder
	printDev(&out, info, "/state/dev.json", "/state")
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "dashboard:    https://127.0.0.1:17080/ ") {
		t.Errorf("the second line is not the dashboard's URL:\n%s", out.String())
	}
	for _, want := range []string{"demo@example.com / pw-demo", "reader@example.com / pw-reader", "other@globex.example / pw-other", "globex"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
}
