package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// appendAll writes es, failing the test on any error.
func appendAll(t *testing.T, s *store.Store, es ...store.AuditEntry) {
	t.Helper()
	for _, e := range es {
		if e.Result == "" {
			e.Result = store.ResultOK
		}
		if err := s.Audit.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// queryOps is the operations of the entries q answers, in order.
func queryOps(t *testing.T, s *store.Store, q store.AuditQuery) []string {
	t.Helper()
	q.All, q.Limit = true, 1000
	es, _, err := s.Audit.Query(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Operation)
	}
	return out
}

// TestAuditFilters: org, result and free text each narrow the answer; the
// text matches actor, operation, path, names and details, any case, its
// LIKE wildcards literal.
func TestAuditFilters(t *testing.T) {
	s, _ := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	appendAll(t, s,
		store.AuditEntry{At: at, Org: "acme", Operation: "deploy", Actor: "Alice@example.com", Path: "/v1/models/x/applications"},
		store.AuditEntry{At: at.Add(time.Second), Org: "globex", Operation: "grant", Actor: "olga@example.com", Result: store.ResultDenied},
		store.AuditEntry{At: at.Add(2 * time.Second), Org: "acme", Operation: "config", Actor: "will@example.com", Result: store.ResultError,
			Details: map[string]any{"target": "postgres_100%"}},
		store.AuditEntry{At: at.Add(3 * time.Second), Org: "acme", Operation: "add-model", Actor: "bob@example.com", Model: "Staging", Controller: "east"},
	)
	for _, c := range []struct {
		name string
		q    store.AuditQuery
		want []string
	}{
		{"org", store.AuditQuery{Org: "globex"}, []string{"grant"}},
		{"result denied", store.AuditQuery{Result: store.ResultDenied}, []string{"grant"}},
		{"result error", store.AuditQuery{Result: store.ResultError}, []string{"config"}},
		{"result ok, org", store.AuditQuery{Result: store.ResultOK, Org: "acme"}, []string{"add-model", "deploy"}},
		{"text in actor, any case", store.AuditQuery{Text: "alice"}, []string{"deploy"}},
		{"text in path", store.AuditQuery{Text: "APPLICATIONS"}, []string{"deploy"}},
		{"text in operation", store.AuditQuery{Text: "rant"}, []string{"grant"}},
		{"text in details", store.AuditQuery{Text: "postgres"}, []string{"config"}},
		{"text with wildcards, literal", store.AuditQuery{Text: "_100%"}, []string{"config"}},
		{"a wildcard matches itself only", store.AuditQuery{Text: "%"}, []string{"config"}},
		{"text in model name", store.AuditQuery{Text: "stag"}, []string{"add-model"}},
		{"text in controller name", store.AuditQuery{Text: "EAST"}, []string{"add-model"}},
		{"text and org", store.AuditQuery{Text: "example.com", Org: "globex"}, []string{"grant"}},
	} {
		if got := queryOps(t, s, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	long := make([]byte, store.MaxAuditText+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, _, err := s.Audit.Query(t.Context(), store.AuditQuery{All: true, Limit: 1, Text: string(long)}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a text over the bound: %v, want ErrInvalid", err)
	}
}

// TestAuditPagesByTimeThenID: pages follow (at, id) newest first, with no
// entry skipped or repeated, when many entries share a time and when ids
// are out of time order (an entry written late, another replica's clock).
func TestAuditPagesByTimeThenID(t *testing.T) {
	s, _ := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var es []store.AuditEntry
	for i := range 7 {
		es = append(es, store.AuditEntry{At: at, Org: "acme", Operation: fmt.Sprintf("same-%d", i)})
	}
	// Written after the entries above, though earlier and later than them.
	es = append(es, store.AuditEntry{At: at.Add(-time.Minute), Org: "acme", Operation: "early"},
		store.AuditEntry{At: at.Add(time.Minute), Org: "acme", Operation: "late"},
		store.AuditEntry{At: at.Add(-time.Hour), Org: "acme", Operation: "earliest"})
	appendAll(t, s, es...)
	all := queryOps(t, s, store.AuditQuery{})
	want := []string{"late", "same-6", "same-5", "same-4", "same-3", "same-2", "same-1", "same-0", "early", "earliest"}
	if !slices.Equal(all, want) {
		t.Fatalf("one page: %q, want %q", all, want)
	}
	for _, size := range []int{1, 2, 3, 4} {
		var got []string
		var after store.AuditCursor
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("page size %d: pages never end", size)
			}
			page, next, err := s.Audit.Query(t.Context(), store.AuditQuery{Orgs: []string{"acme"}, Limit: size, After: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				got = append(got, e.Operation)
			}
			if next.IsZero() {
				break
			}
			c, err := store.ParseAuditCursor(next.String())
			if err != nil || !c.At.Equal(next.At) || c.ID != next.ID {
				t.Fatalf("cursor %q read back as %v, %v", next.String(), c, err)
			}
			after = c
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: %q, want %q", size, got, want)
		}
	}
}

// TestAuditCountUpTo: the count stops at its bound.
func TestAuditCountUpTo(t *testing.T) {
	s, _ := newStore(t)
	for i := range 5 {
		appendAll(t, s, store.AuditEntry{At: time.Now(), Org: "acme", Operation: fmt.Sprintf("op-%d", i)})
	}
	for _, c := range []struct{ most, want int }{{3, 3}, {5, 5}, {9, 5}} {
		if n, err := s.Audit.CountUpTo(t.Context(), store.AuditQuery{Orgs: []string{"acme"}}, c.most); err != nil || n != c.want {
			t.Errorf("count up to %d: %d %v, want %d", c.most, n, err, c.want)
		}
	}
}

// TestAuditActivity: counts by UTC hour or day, operation family and
// result, within the query's scope.
func TestAuditActivity(t *testing.T) {
	s, _ := newStore(t)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	east := time.FixedZone("east", 5*3600)
	appendAll(t, s,
		store.AuditEntry{At: day.Add(10*time.Hour + 5*time.Minute), Org: "acme", Operation: "deploy"},
		store.AuditEntry{At: day.Add(10*time.Hour + 50*time.Minute).In(east), Org: "acme", Operation: "deploy"},
		store.AuditEntry{At: day.Add(10 * time.Hour), Org: "acme", Operation: "deploy", Result: store.ResultDenied},
		store.AuditEntry{At: day.Add(11 * time.Hour), Org: "acme", Operation: "login-device"},
		store.AuditEntry{At: day.Add(11 * time.Hour), Org: "acme", Operation: "login-web"},
		store.AuditEntry{At: day.Add(11 * time.Hour), Org: "acme", Operation: "model adopted"},
		store.AuditEntry{At: day.Add(25 * time.Hour), Org: "acme", Operation: "deploy"},
		store.AuditEntry{At: day.Add(10 * time.Hour), Org: "globex", Operation: "deploy"},
	)
	str := func(cs []store.ActivityCount) []string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s %s %s %d", c.Start.Format(time.RFC3339), c.Operation, c.Result, c.Count))
		}
		return out
	}
	q := store.AuditQuery{Orgs: []string{"acme"}, Since: day, Until: day.Add(48 * time.Hour)}
	hours, err := s.Audit.Activity(t.Context(), q, store.BucketHour)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-03-02T10:00:00Z deploy denied 1", "2026-03-02T10:00:00Z deploy ok 2",
		"2026-03-02T11:00:00Z login ok 2", "2026-03-02T11:00:00Z model ok 1", "2026-03-03T01:00:00Z deploy ok 1"}
	if got := str(hours); !slices.Equal(got, want) {
		t.Errorf("by hour:\n%q\nwant\n%q", got, want)
	}
	days, err := s.Audit.Activity(t.Context(), q, store.BucketDay)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"2026-03-02T00:00:00Z deploy denied 1", "2026-03-02T00:00:00Z deploy ok 2",
		"2026-03-02T00:00:00Z login ok 2", "2026-03-02T00:00:00Z model ok 1", "2026-03-03T00:00:00Z deploy ok 1"}
	if got := str(days); !slices.Equal(got, want) {
		t.Errorf("by day:\n%q\nwant\n%q", got, want)
	}
	if _, err := s.Audit.Activity(t.Context(), q, "week"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bucket week: %v, want ErrInvalid", err)
	}
}

// FuzzParseAuditCursor: any text is refused or read back to itself.
func FuzzParseAuditCursor(f *testing.F) {
	for _, s := range []string{"", "1_1", "1767225600000000_42", "-5_3", "1_0", "_", "1__2", "9223372036854775807_9223372036854775807", "x_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := store.ParseAuditCursor(s)
		if err != nil {
			if !errors.Is(err, store.ErrBadCursor) {
				t.Fatalf("%q: %v, not ErrBadCursor", s, err)
			}
			return
		}
		again, err := store.ParseAuditCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("%q: %v read back as %v, %v", s, c, again, err)
		}
	})
}
