package hub_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
)

// fetch sends GET path with tok and returns the answer's status, headers
// and body.
func (e *env) fetch(path, tok string) (int, http.Header, []byte) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodGet, e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// seedAudit writes acme's and globex's entries: many at one time, some
// written out of time order, some whose text a spreadsheet would take
// for a formula.
func seedAudit(t *testing.T, st *store.Store) {
	t.Helper()
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	var es []store.AuditEntry
	for i := range 12 {
		es = append(es, store.AuditEntry{At: at, Org: "acme", Operation: "deploy", Actor: fmt.Sprintf("same-%d@example.com", i)})
	}
	for i := range 9 {
		// Later ids, earlier times: a cursor of the id alone would skip them.
		es = append(es, store.AuditEntry{At: at.Add(-time.Duration(i+1) * time.Minute), Org: "acme", Operation: "config",
			Actor: fmt.Sprintf("late-%d@example.com", i), Result: store.ResultDenied})
	}
	for _, a := range []string{"=1+2", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx"} {
		es = append(es, store.AuditEntry{At: at.Add(time.Minute), Org: "acme", Operation: "add-group", Actor: a, Result: store.ResultError})
	}
	for i := range 4 {
		es = append(es, store.AuditEntry{At: at, Org: "globex", Operation: "deploy", Actor: fmt.Sprintf("globex-%d@example.com", i)})
	}
	for _, e := range es {
		if e.Result == "" {
			e.Result = store.ResultOK
		}
		if err := st.Audit.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// pagedAudit reads GET /v1/audit?query page by page (size entries).
func (e *env) pagedAudit(tok, query string, size int) []store.AuditEntry {
	e.t.Helper()
	var all []store.AuditEntry
	after := ""
	for range 100 {
		var page struct {
			Entries []store.AuditEntry
			Next    string
		}
		e.get("/v1/audit?"+query+"&limit="+strconv.Itoa(size)+after, tok, &page)
		all = append(all, page.Entries...)
		if page.Next == "" {
			return all
		}
		after = "&after=" + url.QueryEscape(page.Next)
	}
	e.t.Fatal("the pages never end")
	return nil
}

// TestAuditExportIsThePagedAnswer: the export (CSV and JSON) holds the
// entries of GET /v1/audit with the same filters, in order, on every page
// (paging by (at, id) skips none of those at one time or written out of
// time order); it is an attachment; its CSV cells are safe to open; the
// caller sees no other organization's entries; and the export is audited
// with its filters.
func TestAuditExportIsThePagedAnswer(t *testing.T) {
	f := newFixture(t)
	seedAudit(t, f.st)
	alice := f.token(f.alice, 5*time.Minute, "")
	const query = "since=2000-01-01T00:00:00Z"
	paged := f.pagedAudit(alice, query, 5)
	var ids []int64
	for _, e := range paged {
		if e.Org != "acme" {
			t.Errorf("acme's administrator reads another organization's entry: %+v", e)
		}
		ids = append(ids, e.ID)
	}
	var one struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?"+query+"&limit=1000", alice, &one)
	if len(paged) < 27 || len(paged) != len(one.Entries) {
		t.Fatalf("paged %d entries, one page %d", len(paged), len(one.Entries))
	}
	for i := range paged {
		if paged[i].ID != one.Entries[i].ID {
			t.Fatalf("entry %d: paged %d, one page %d", i, paged[i].ID, one.Entries[i].ID)
		}
		if i > 0 && (paged[i].At.After(paged[i-1].At) || paged[i].At.Equal(paged[i-1].At) && paged[i].ID > paged[i-1].ID) {
			t.Fatalf("entries %d and %d out of (at, id) order", i-1, i)
		}
	}

	code, h, b := f.fetch("/v1/audit/export?format=json&"+query, alice)
	if code != http.StatusOK {
		t.Fatalf("json export: %d %s", code, b)
	}
	if cd := h.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename="drover-audit-\d{8}T\d{6}Z\.json"$`).MatchString(cd) {
		t.Errorf("json export disposition %q", cd)
	}
	var exported []store.AuditEntry
	if err := json.Unmarshal(b, &exported); err != nil {
		t.Fatalf("json export %s: %v", b, err)
	}
	var got []int64
	for _, e := range exported {
		got = append(got, e.ID)
	}
	// The export itself is audited, after the pages were read: newer
	// than any of them, and not among them.
	if !slices.Equal(got, ids) {
		t.Errorf("json export ids %v, paged %v", got, ids)
	}

	// The JSON export is in the log now, older than the next export.
	paged = f.pagedAudit(alice, query, 7)
	ids = ids[:0]
	for _, e := range paged {
		ids = append(ids, e.ID)
	}
	if paged[0].Operation != "audit-export" {
		t.Errorf("the newest entry: %+v, want the json export's", paged[0])
	}
	code, h, b = f.fetch("/v1/audit/export?format=csv&"+query, alice)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv export: %d %s %s", code, h.Get("Content-Type"), b)
	}
	if cd := h.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename="drover-audit-\d{8}T\d{6}Z\.csv"$`).MatchString(cd) {
		t.Errorf("csv export disposition %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatalf("csv export: %v", err)
	}
	if len(rows) != len(ids)+1 {
		t.Fatalf("csv export: %d rows for %d entries", len(rows)-1, len(ids))
	}
	guarded := map[string]bool{}
	for i, r := range rows[1:] {
		if r[0] != strconv.FormatInt(ids[i], 10) {
			t.Fatalf("csv row %d: id %s, paged %d", i, r[0], ids[i])
		}
		if paged[i].Operation == "add-group" {
			guarded[r[2]] = true
		}
	}
	for _, want := range []string{"'=1+2", "'+SUM(A1)", "'-2+3", "'@cmd", `'\tx`, `'\rx`} {
		if !guarded[want] {
			t.Errorf("csv actor %q missing (guarded: %v)", want, guarded)
		}
	}

	var audited struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=audit-export", alice, &audited)
	if len(audited.Entries) != 2 {
		t.Fatalf("the exports' audit entries: %+v", audited.Entries)
	}
	for i, e := range audited.Entries {
		if e.IdentityID != f.alice.ID || e.Result != store.ResultOK || e.Details["since"] != "2000-01-01T00:00:00Z" ||
			e.Details["rows"] != float64(len(ids)-i) {
			t.Errorf("an export's audit entry: %+v", e)
		}
	}
	if f := audited.Entries[0].Details["format"]; f != "csv" {
		t.Errorf("the newest export's format %v, want csv", f)
	}
}

// TestAuditExportFiltersAndScope: the export takes GET /v1/audit's
// filters, and answers only what the caller may read.
func TestAuditExportFiltersAndScope(t *testing.T) {
	f := newFixture(t)
	seedAudit(t, f.st)
	ops := func(tok, query string) []string {
		t.Helper()
		code, _, b := f.fetch("/v1/audit/export?"+query, tok)
		var es []store.AuditEntry
		if code != http.StatusOK || json.Unmarshal(b, &es) != nil {
			t.Fatalf("export %s: %d %s", query, code, b)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Org+" "+e.Operation+" "+e.Result)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	alice, olga := f.token(f.alice, time.Minute, ""), f.token(f.olga, time.Minute, "")
	for _, c := range []struct {
		tok, query string
		want       []string
	}{
		{alice, "result=denied", []string{"acme config denied"}},
		{alice, "result=error&operation=add-group", []string{"acme add-group error"}},
		{alice, "org=globex", nil},
		{olga, "org=globex&operation=deploy", []string{"globex deploy ok"}},
		{olga, "q=same-", nil},
		{alice, "q=LATE-3", []string{"acme config denied"}},
		{f.hubAdmin(), "q=globex-1", []string{"globex deploy ok"}},
	} {
		if got := ops(c.tok, c.query); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.query, got, c.want)
		}
	}
	for _, q := range []string{"result=maybe", "format=xml", "limit=5", "after=1_1", "q=" + strings.Repeat("x", store.MaxAuditText+1), "since=yesterday"} {
		if code, _, b := f.fetch("/v1/audit/export?"+q, alice); code != http.StatusBadRequest {
			t.Errorf("export %s: %d %s, want 400", q, code, b)
		}
	}
	if code, _, b := f.fetch("/v1/audit?after=42", alice); code != http.StatusBadRequest {
		t.Errorf("an id for a cursor: %d %s, want 400", code, b)
	}
}

// TestAuditExportBound: an export larger than the hub answers at once is
// refused, before any of it is sent.
func TestAuditExportBound(t *testing.T) {
	e := newEnvWith(t, func(c *hub.Config) { hub.SetExportRows(c, 5) })
	seedAudit(t, e.st)
	root := e.hubAdmin()
	code, _, b := e.fetch("/v1/audit/export?format=csv&org=acme", root)
	var ae api.Error
	if code != http.StatusBadRequest || json.Unmarshal(b, &ae) != nil || !strings.Contains(ae.Message, "narrow it") {
		t.Fatalf("an export over the bound: %d %s", code, b)
	}
	code, _, b = e.fetch("/v1/audit/export?format=csv&org=globex", root)
	if rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll(); code != http.StatusOK || err != nil || len(rows) != 5 {
		t.Fatalf("an export within it: %d %q %v", code, rows, err)
	}
}

// newEnvWith is newEnv with opts.
func newEnvWith(t *testing.T, opts ...func(*hub.Config)) *env { return newEnv(t, opts...) }

// TestAuditActivityCounts: GET /v1/audit/activity counts what the caller
// may read, by bucket, operation family and result.
func TestAuditActivityCounts(t *testing.T) {
	f := newFixture(t)
	seedAudit(t, f.st)
	since := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
	var act api.Activity
	f.get("/v1/audit/activity?bucket=day&org=acme&since="+since, f.token(f.alice, time.Minute, ""), &act)
	got := map[string]int64{}
	for _, b := range act.Series {
		got[b.Operation+" "+b.Result] += b.Count
	}
	// newFixture writes one acme deploy of its own.
	want := map[string]int64{"deploy ok": 13, "config denied": 9, "add error": 6}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	var globex api.Activity
	f.get("/v1/audit/activity?bucket=hour&org=globex&since="+since, f.token(f.alice, time.Minute, ""), &globex)
	if len(globex.Series) != 0 || globex.Bucket != "hour" {
		t.Errorf("acme's administrator counts globex's entries: %+v", globex)
	}
	for _, q := range []string{"bucket=week", "bucket=hour&since=2020-01-01T00:00:00Z", "since=x", "since=2030-01-01T00:00:00Z&until=2029-01-01T00:00:00Z"} {
		if code, b := f.do(http.MethodGet, "/v1/audit/activity?"+q, f.token(f.alice, time.Minute, ""), nil); code != http.StatusBadRequest {
			t.Errorf("activity %s: %d %s, want 400", q, code, b)
		}
	}
}
