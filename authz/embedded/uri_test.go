package embedded_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/droverhq/drover/authz/embedded"
)

func TestDatastoreURI(t *testing.T) {
	got, err := embedded.DatastoreURI("postgres://u:p%40ss@db.example:5433/hub?sslmode=verify-full&search_path=public", "openfga")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if pw, _ := u.User.Password(); u.Host != "db.example:5433" || u.Path != "/hub" || u.User.Username() != "u" || pw != "p@ss" ||
		q.Get("sslmode") != "verify-full" || q.Get("search_path") != "openfga" || len(q["search_path"]) != 1 {
		t.Errorf("DatastoreURI = %s", got)
	}
	for _, bad := range []string{"host=/tmp dbname=hub", "", "postgres://u@h:notaport/db"} {
		if got, err := embedded.DatastoreURI(bad, "openfga"); err == nil {
			t.Errorf("DatastoreURI(%q) = %s, want an error", bad, got)
		} else if bad == "host=/tmp dbname=hub" && !strings.Contains(err.Error(), "as a URL (postgres://…)") {
			t.Errorf("DatastoreURI(%q): %v", bad, err)
		}
	}
}
