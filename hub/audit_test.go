package hub_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestAuditFiltersAndCSV: GET /v1/audit names the user as people do (an
// email, not only an identity id), and exports CSV with the model's name.
func TestAuditFiltersAndCSV(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, e := range []store.AuditEntry{
		{Org: "acme", ModelUUID: f.model.UUID, Operation: "config", IdentityID: f.will.ID, Actor: "will@example.com"},
		{Org: "acme", Operation: "add-group", IdentityID: f.alice.ID, Actor: "alice@example.com"},
	} {
		e.At, e.Result = time.Now(), store.ResultOK
		if err := f.st.Audit.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	admin := f.token(f.alice, time.Minute, "")
	ops := func(query string) []string {
		t.Helper()
		var out struct{ Entries []store.AuditEntry }
		f.get("/v1/audit?"+query, admin, &out)
		var got []string
		for _, e := range out.Entries {
			got = append(got, e.Actor+" "+e.Operation+" "+e.Model)
		}
		return got
	}
	for _, user := range []string{"will@example.com", f.will.ID} {
		if got, want := ops("user="+user), []string{"will@example.com config prod"}; !slices.Equal(got, want) {
			t.Errorf("user=%s: %q, want %q", user, got, want)
		}
	}
	// An organization's auditor is not told who has an account on the hub
	// (TestNoUserEnumeration); the hub's own auditors are.
	if code, b := f.do(http.MethodGet, "/v1/audit?user=nobody@example.com", admin, nil); code != http.StatusOK || string(b) != "{\"entries\":[]}\n" {
		t.Errorf("an unknown user, to an organization's auditor: %d %s", code, b)
	}
	if code, b := f.do(http.MethodGet, "/v1/audit?user=nobody@example.com", f.hubAdmin(), nil); code != http.StatusNotFound {
		t.Errorf("an unknown user, to the hub's administrator: %d %s", code, b)
	}

	rows := f.auditCSV(admin, "operation=config", 2)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	r := rows[1]
	if r[col["actor"]] != "will@example.com" || r[col["model_uuid"]] != f.model.UUID || r[col["model"]] != "prod" || r[col["result"]] != "ok" {
		t.Errorf("csv row %q (header %q)", r, rows[0])
	}
	var details map[string]any
	if err := json.Unmarshal([]byte(r[col["details"]]), &details); err != nil {
		t.Errorf("csv details %q: %v", r[col["details"]], err)
	}
}

// TestAuditKeepsTheNamesOfGoneModels: an entry records its model's name,
// so a destroyed model is still named, and model= takes that name.
func TestAuditKeepsTheNamesOfGoneModels(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	staging := store.Model{UUID: uuid.NewString(), Name: "staging", Org: "acme", Owner: f.alice.ID, ControllerUUID: f.ctrl.UUID}
	if err := f.st.Models.Insert(ctx, staging); err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.AuditEntry{
		{Org: "acme", ModelUUID: staging.UUID, Operation: "deploy"},                              // named from the index
		{Org: "acme", ModelUUID: f.model.UUID, Operation: "config"},                              // another model
		{Org: "acme", ModelUUID: uuid.NewString(), Operation: "destroy-model", Model: "staging"}, // named by the writer
	} {
		e.At, e.Result, e.Actor = time.Now(), store.ResultOK, "alice@example.com"
		if err := f.st.Audit.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.st.Models.Delete(ctx, staging.UUID); err != nil {
		t.Fatal(err)
	}
	var out struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?model=staging", f.token(f.alice, time.Minute, ""), &out)
	var got []string
	for _, e := range out.Entries {
		got = append(got, e.Operation+" "+e.Model)
	}
	if want := []string{"destroy-model staging", "deploy staging"}; !slices.Equal(got, want) {
		t.Errorf("model=staging after the model went: %q, want %q", got, want)
	}
}

// TestAuditNamesTheTargetOfARefusedGrant: a grant refused (a reader
// granting themselves admin, another organization's administrator trying a
// model they cannot see) is recorded against the model it asked for, so
// the model's auditors find the attempt, not only the actor's
// organization. That organization is not told the name of another's
// model.
func TestAuditNamesTheTargetOfARefusedGrant(t *testing.T) {
	f := newFixture(t)
	for _, try := range []struct {
		who  string
		tok  string
		want int
	}{
		{"rita@example.com", f.token(f.rita, time.Minute, ""), http.StatusForbidden},
		{"olga@example.com", f.token(f.olga, time.Minute, ""), http.StatusNotFound},
	} {
		body := map[string]string{"user": try.who, "level": "admin", "model": f.model.UUID}
		if code, b := f.do(http.MethodPost, "/v1/grants", try.tok, body); code != try.want {
			t.Fatalf("%s granting themselves admin: %d %s, want %d", try.who, code, b, try.want)
		}
	}
	var out struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=grant&model="+f.model.UUID, f.token(f.alice, time.Minute, ""), &out)
	var got []string
	for _, e := range out.Entries {
		got = append(got, e.Actor+" "+e.Model+" "+e.Result)
	}
	slices.Sort(got)
	if want := []string{"olga@example.com prod denied", "rita@example.com prod denied"}; !slices.Equal(got, want) {
		t.Errorf("the model's grants in the audit log: %q, want %q", got, want)
	}
	// Olga's organization's auditors see her attempt, and the model's UUID
	// she typed, but not the name of a model of another organization.
	out.Entries = nil
	f.get("/v1/audit?operation=grant", f.token(f.olga, time.Minute, ""), &out)
	if len(out.Entries) != 1 || out.Entries[0].ModelUUID != f.model.UUID || out.Entries[0].Model != "" || out.Entries[0].Org != "globex" {
		t.Errorf("globex's audit of olga's attempt: %+v", out.Entries)
	}
}

// TestAuditCSVIsSafeToOpen: a failed login records the client id it was
// given, by anyone, unauthenticated: the CSV export neither hands a
// spreadsheet a formula nor a terminal its control characters; the JSON
// answer keeps the text exact.
func TestAuditCSVIsSafeToOpen(t *testing.T) {
	e := newEnv(t)
	root := e.hubAdmin()
	formula, escapes := `=HYPERLINK("http://evil.example","x")`, "\x1b[1A\x1b[2Kok"
	for _, id := range []string{formula, escapes} {
		if code, tr := e.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {id},
			"client_secret": {"x"}}); code != http.StatusUnauthorized || tr.Error != "invalid_client" {
			t.Fatalf("login as %q: %d %+v", id, code, tr)
		}
	}
	rows := e.auditCSV(root, "operation=login-client-credentials", 3)
	actors := []string{rows[1][2], rows[2][2]}
	slices.Sort(actors)
	if want := slices.Sorted(slices.Values([]string{"'" + formula, `\x1b[1A\x1b[2Kok`})); !slices.Equal(actors, want) {
		t.Fatalf("csv actors %q, want %q", actors, want)
	}
	var out struct{ Entries []store.AuditEntry }
	if code, b := e.do(http.MethodGet, "/v1/audit?operation=login-client-credentials", root, nil); code != http.StatusOK ||
		json.Unmarshal(b, &out) != nil || len(out.Entries) != 2 {
		t.Fatalf("json: %d %s", code, b)
	}
	got := []string{out.Entries[0].Actor, out.Entries[1].Actor}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values([]string{formula, escapes})); !slices.Equal(got, want) {
		t.Fatalf("json actors %q, want %q", got, want)
	}
}

// auditCSV reads the audit log as CSV for tok with query, which must
// answer n rows (the header included).
func (e *env) auditCSV(tok, query string, n int) [][]string {
	e.t.Helper()
	code, b := e.do(http.MethodGet, "/v1/audit?format=csv&"+query, tok, nil)
	if code != http.StatusOK {
		e.t.Fatalf("csv: %d %s", code, b)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil || len(rows) != n {
		e.t.Fatalf("csv rows %q: %v", rows, err)
	}
	return rows
}

// TestAuditShowsEveryoneTheirOwnEntries: a service account holding no
// audit_viewer reads its own logins and nobody else's; asking for
// another's entries gets none.
func TestAuditShowsEveryoneTheirOwnEntries(t *testing.T) {
	f := newFixture(t)
	login := func() tokenResp {
		code, sess := f.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}})
		if code != http.StatusOK {
			t.Fatalf("service account login: %d %+v", code, sess)
		}
		return sess
	}
	login()
	sess := login()
	ci := f.whoami(sess.AccessToken)
	// Others' entries, which the service account must not see.
	f.get("/v1/audit", f.token(f.alice, time.Minute, ""), &struct{}{})
	if code, _ := f.do(http.MethodPost, "/v1/grants", f.token(f.rita, time.Minute, ""),
		map[string]string{"user": "rita@example.com", "level": "admin", "model": f.model.UUID}); code != http.StatusForbidden {
		t.Fatalf("rita granting herself admin: %d", code)
	}

	var out struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=login", sess.AccessToken, &out)
	var got []string
	for _, e := range out.Entries {
		if e.IdentityID != ci.ID {
			t.Errorf("the service account sees another's entry: %+v", e)
		}
		got = append(got, e.Operation+" "+e.Result)
	}
	if want := []string{"login-client-credentials ok", "login-client-credentials ok"}; !slices.Equal(got, want) {
		t.Errorf("its own logins: %q, want %q", got, want)
	}
	f.get("/v1/audit", sess.AccessToken, &out)
	for _, e := range out.Entries {
		if e.IdentityID != ci.ID {
			t.Errorf("the service account sees another's entry: %+v", e)
		}
	}
	f.get("/v1/audit?user=rita@example.com", sess.AccessToken, &out)
	if len(out.Entries) != 0 {
		t.Errorf("the service account reads rita's entries: %+v", out.Entries)
	}
}
