package spoke

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// migrationCall is one call of the hub's migration driver to node 0 of c,
// as the controller's administrator: the step's route under
// /v1/controller/migrations/{model}, its Idempotency-Key (none when
// empty), a body and more headers. It returns the status, the headers
// and the body.
func (c *testCluster) migrationCall(t *testing.T, method, model, step, key string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method,
		"https://"+c.nodes[0].cfg.Listen+"/v1/controller/migrations/"+model+"/"+step, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(c.cred.User, c.cred.Password)
	if key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.rawClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, step, err)
	}
	return resp.StatusCode, resp.Header, b
}

// stepBody is a MigrationStepRequest's body.
func stepBody(id string) []byte {
	b, _ := json.Marshal(api.MigrationStepRequest{MigrationID: id})
	return b
}

// wantStep fails unless a call answered status.
func wantStep(t *testing.T, what string, status, want int, body []byte) {
	t.Helper()
	if status != want {
		t.Fatalf("%s: HTTP %d %s, want %d", what, status, body, want)
	}
}

// exportedRows is an export's model and rows with their raft indexes and
// the model's migration marks cleared: what a migration must carry over.
func exportedRows(t *testing.T, b []byte) string {
	t.Helper()
	rows, err := state.ReadModelExport(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	m := *rows.Model
	m.Migration, m.ImportedBy, m.Meta = nil, "", api.Meta{}
	out := map[string]any{"model": &m}
	for _, ch := range rows.Charms {
		ch.Meta = api.Meta{}
	}
	out["charms"] = rows.Charms
	for table, rs := range rows.Rows {
		for _, r := range rs {
			if m := tables.Meta(r); m != nil {
				*m = api.Meta{}
			}
		}
		out[table] = rs
	}
	j, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// readEvents reads event frames until one names until's summary; a frame
// before it, or it, naming model removed, or model's summary when model is
// not until, fails the test.
func readEvents(t *testing.T, ws *websocket.Conn, model, until, what string) {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("reading events up to the summary of %s: %v", until, err)
		}
		if slices.Contains(f.Removed, model) {
			t.Fatalf("the frame at %d names %s removed: the hub never heard of it here", f.Index, what)
		}
		named := slices.ContainsFunc(f.Models, func(m api.ModelSummary) bool { return m.UUID == model })
		if named && model != until {
			t.Fatalf("the frame at %d names %s", f.Index, what)
		}
		if slices.ContainsFunc(f.Models, func(m api.ModelSummary) bool { return m.UUID == until }) {
			return
		}
	}
}

// listed reports whether node 0 of c lists model to its administrator.
func listed(t *testing.T, c *testCluster, model string) bool {
	t.Helper()
	models, err := c.client(0).Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(models, func(m api.Model) bool { return m.UUID == model })
}

// TestMigrationMovesAModelBetweenControllers drives a model from one
// controller to another through the migration routes, as the hub's
// driver does: quiesce (a user's write is then refused, 409 with
// Retry-After), export, an import whose SHA-256 does not match (refused,
// nothing imported), an import aborted, the import, activate. Each call
// asked again with its key answers the same. While it is imported the
// model is in no listing, no event frame, and its agents are refused;
// activated, it is listed, the event stream names it, its agents are
// served, and its rows equal the source's.
func TestMigrationMovesAModelBetweenControllers(t *testing.T) {
	env := newAgentEnv(t, 1)
	src, model := env.c, env.model
	dst := newTestCluster(t, 1)
	ctx := t.Context()

	// Quiesce, asked twice: the same answer.
	status, _, first := src.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), nil)
	wantStep(t, "quiesce", status, http.StatusOK, first)
	status, _, again := src.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), nil)
	wantStep(t, "quiesce asked again", status, http.StatusOK, again)
	if !bytes.Equal(first, again) {
		t.Errorf("quiesce asked again answered\n%s\nnot\n%s", again, first)
	}
	var quiesced api.Model
	if err := json.Unmarshal(first, &quiesced); err != nil || quiesced.Migration == nil ||
		quiesced.Migration.ID != "mig-1" || quiesced.Migration.Role != api.MigrationSource {
		t.Fatalf("quiesced model %s: %v", first, err)
	}
	// A user's write is refused until the migration ends; the model stays
	// listed on the source.
	status, e := src.raw(t, "PATCH", "/v1/models/"+model+"/config", `{"set":{"k":"v"}}`)
	if status != http.StatusConflict || e.Code != api.CodeMigrating {
		t.Fatalf("a write to a quiesced model: HTTP %d %+v, want 409 %s", status, e, api.CodeMigrating)
	}
	resp := src.do(src.rawClient(), 0, "PATCH", "/v1/models/"+model+"/config", func(r *http.Request) {
		r.SetBasicAuth(src.cred.User, src.cred.Password)
		r.Body = io.NopCloser(strings.NewReader(`{"set":{"k":"v"}}`))
	})
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a write to a quiesced model: HTTP %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !listed(t, src, model) {
		t.Fatal("the quiesced source model is not listed")
	}

	// Export: the bytes have the SHA-256 the header names.
	status, hdr, export := src.migrationCall(t, "GET", model, "export?migration=mig-1", "mig-1/EXPORT/1", nil, nil)
	wantStep(t, "export", status, http.StatusOK, export)
	sum := sha256.Sum256(export)
	if got := hdr.Get(api.HeaderExportSHA256); got != hex.EncodeToString(sum[:]) || hdr.Get(api.HeaderIndex) == "" {
		t.Fatalf("export headers: sha256 %q (the bytes' is %x), index %q", got, sum, hdr.Get(api.HeaderIndex))
	}
	shaHdr := map[string]string{api.HeaderExportSHA256: hdr.Get(api.HeaderExportSHA256)}

	// The target's event stream, from before the import.
	events, reset := dialEvents(t, dst, 0)
	if slices.ContainsFunc(reset.Models, func(m api.ModelSummary) bool { return m.UUID == model }) {
		t.Fatal("the target's reset frame names the model before its import")
	}

	// A body that is not the export named is refused, and nothing is
	// imported.
	tampered := bytes.Clone(export)
	tampered[len(tampered)-1] ^= 1
	status, _, b := dst.migrationCall(t, "POST", model, "import?migration=mig-1", "mig-1/IMPORT/1", tampered, shaHdr)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "nothing was imported") {
		t.Fatalf("an import whose SHA-256 differs: HTTP %d %s", status, b)
	}
	if m, err := dst.nodes[0].srv.Store().Snapshot().ModelByUUID(model); err != nil || m != nil {
		t.Fatalf("after a refused import the target holds %+v, %v", m, err)
	}

	// An import aborted leaves nothing, and may be aborted again.
	status, _, b = dst.migrationCall(t, "POST", model, "import?migration=mig-0", "mig-0/IMPORT/1", export, shaHdr)
	wantStep(t, "import for mig-0", status, http.StatusOK, b)
	for range 2 {
		status, _, b = dst.migrationCall(t, "POST", model, "abort-import", "mig-0/ABORTING/1", stepBody("mig-0"), nil)
		wantStep(t, "abort-import", status, http.StatusNoContent, b)
	}
	if m, err := dst.nodes[0].srv.Store().Snapshot().ModelByUUID(model); err != nil || m != nil {
		t.Fatalf("after an aborted import the target holds %+v, %v", m, err)
	}

	// The import, asked twice: the same answer.
	status, _, first = dst.migrationCall(t, "POST", model, "import?migration=mig-1", "mig-1/IMPORT/1", export, shaHdr)
	wantStep(t, "import", status, http.StatusOK, first)
	status, _, again = dst.migrationCall(t, "POST", model, "import?migration=mig-1", "mig-1/IMPORT/1", export, shaHdr)
	wantStep(t, "import asked again", status, http.StatusOK, again)
	if !bytes.Equal(first, again) {
		t.Errorf("import asked again answered\n%s\nnot\n%s", again, first)
	}

	// Imported, the model is hidden: unlisted, absent from a new event
	// stream's reset, its agents refused.
	if listed(t, dst, model) {
		t.Error("the target lists the model being imported")
	}
	_, reset = dialEvents(t, dst, 0)
	if slices.ContainsFunc(reset.Models, func(m api.ModelSummary) bool { return m.UUID == model }) {
		t.Error("the target's reset frame names the model being imported")
	}
	_, aresp, err := dialAgent(ctx, dst.nodes[0].cfg.Listen, []byte(dst.cred.CACert), "machine-"+model+"-0", "secret-0", 0)
	if err == nil || aresp == nil || aresp.StatusCode != http.StatusConflict {
		t.Fatalf("an agent of the model being imported dialled the target: %v (%v)", err, aresp)
	}
	status, _, b = dst.migrationCall(t, "GET", model, "export?migration=mig-1", "mig-1/EXPORT/1", nil, nil)
	if status != http.StatusConflict {
		t.Errorf("an export of the model being imported: HTTP %d %s, want 409", status, b)
	}
	// The stream opened before the import sends none of it (nor of the
	// aborted import, not even its removal): read up to the frame of a
	// model added after them.
	marker, err := dst.client(0).AddModel(ctx, api.AddModelRequest{Name: "marker"})
	if err != nil {
		t.Fatal(err)
	}
	readEvents(t, events, model, marker.UUID, "the model being imported")

	// Activate, asked twice: the same answer.
	status, _, first = dst.migrationCall(t, "POST", model, "activate", "mig-1/SUCCESS/1", stepBody("mig-1"), nil)
	wantStep(t, "activate", status, http.StatusOK, first)
	status, _, again = dst.migrationCall(t, "POST", model, "activate", "mig-1/SUCCESS/1", stepBody("mig-1"), nil)
	wantStep(t, "activate asked again", status, http.StatusOK, again)
	if !bytes.Equal(first, again) {
		t.Errorf("activate asked again answered\n%s\nnot\n%s", again, first)
	}

	// Activated, the stream sends the model's summary: how the hub's
	// indexer learns of it.
	readEvents(t, events, model, model, "the activated model")
	if !listed(t, dst, model) {
		t.Error("the target does not list the activated model")
	}
	// The activated model has the source's rows, and serves on the
	// target: its agent is served, a user's write applies.
	status, _, got := dst.migrationCall(t, "GET", model, "export?migration=mig-2", "mig-2/EXPORT/1", nil, nil)
	wantStep(t, "export from the target", status, http.StatusOK, got)
	if g, w := exportedRows(t, got), exportedRows(t, export); g != w {
		t.Fatalf("the target's model differs from the source's:\n got %s\nwant %s", g, w)
	}
	env.c = dst
	env.dial(t, 0, "0")
	if _, err := dst.client(0).Model(model).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": "v"}}); err != nil {
		t.Fatalf("a write to the activated model: %v", err)
	}
}

// TestMigrationCallsAreTheHubDriversAlone: a migration call needs a
// controller superuser (the controller's administrator or the hub's
// superuser token, not a model's admin token) and an Idempotency-Key of
// its own migration; an import names the SHA-256 it sends. A call refused
// changes nothing.
func TestMigrationCallsAreTheHubDriversAlone(t *testing.T) {
	hub := newFakeHub(t)
	key := newECKey(t)
	hub.publish("k1", key)
	c, admin, info := hubTrustingCluster(t, hub, func(cfg *Config) { cfg.MaxExportSize = 1 << 10 })
	ctx := t.Context()
	model := deployKV(t, admin, "moving")
	if _, _, err := c.nodes[0].srv.Propose(ctx, state.UpsertUserType, &state.UpsertUserRequest{
		User: api.User{Name: "bob", Access: "login"}, PasswordHash: HashSecret("bob-pw")}); err != nil {
		t.Fatal(err)
	}
	bob := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:bob-pw"))}
	hubToken := func(access, model string) map[string]string {
		now := time.Now()
		return map[string]string{"Authorization": "Bearer " + sign(t, "k1", key, hubClaims{Claims: jwt.Claims{Issuer: hub.srv.URL,
			Subject: "alice@example.com", Audience: jwt.Audience{info.UUID}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)),
			IssuedAt: jwt.NewNumericDate(now)}, Access: access, Model: model})}
	}
	for _, r := range []struct {
		name, step, key string
		body            []byte
		hdr             map[string]string
		status          int
		code            api.Code
	}{
		{"no key", "quiesce", "", stepBody("mig-1"), nil, 400, api.CodeBadRequest},
		{"a key without an attempt", "quiesce", "mig-1/QUIESCE", stepBody("mig-1"), nil, 400, api.CodeBadRequest},
		{"a key whose attempt is no number", "quiesce", "mig-1/QUIESCE/-1", stepBody("mig-1"), nil, 400, api.CodeBadRequest},
		{"another migration's key", "quiesce", "mig-2/QUIESCE/1", stepBody("mig-1"), nil, 422, api.CodeInvalid},
		{"no migration", "quiesce", "mig-1/QUIESCE/1", stepBody(""), nil, 422, api.CodeInvalid},
		{"a user without superuser access", "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), bob, 403, api.CodeForbidden},
		{"a model admin's hub token", "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), hubToken("admin", model), 403, api.CodeForbidden},
		{"an import naming no SHA-256", "import?migration=mig-1", "mig-1/IMPORT/1", []byte("export"), nil, 400, api.CodeBadRequest},
		{"an export with another migration's key", "export?migration=mig-1", "mig-3/EXPORT/1", nil, nil, 422, api.CodeInvalid},
	} {
		method := "POST"
		if strings.HasPrefix(r.step, "export") {
			method = "GET"
		}
		status, _, b := c.migrationCall(t, method, model, r.step, r.key, r.body, r.hdr)
		var e api.Error
		_ = json.Unmarshal(b, &e)
		if status != r.status || e.Code != r.code {
			t.Errorf("%s: HTTP %d %s, want %d %s", r.name, status, b, r.status, r.code)
		}
	}
	if m, err := admin.Model(model).Info(ctx, api.ReadOptions{Consistent: true}); err != nil || m.Migration != nil {
		t.Fatalf("after refused calls the model is %+v, %v", m, err)
	}
	// An export over the controller's bound is refused whole.
	other := newTestCluster(t, 1)
	status, hdr, export := other.migrationCall(t, "GET", deployKV(t, other.client(0), "big"), "export?migration=mig-9", "mig-9/EXPORT/1", nil, nil)
	wantStep(t, "export", status, http.StatusOK, export)
	rows, err := state.ReadModelExport(bytes.NewReader(export))
	if err != nil || len(export) <= 1<<10 {
		t.Fatalf("an export of %d bytes: %v", len(export), err)
	}
	status, _, b := c.migrationCall(t, "POST", rows.Model.UUID, "import?migration=mig-9", "mig-9/IMPORT/1", export,
		map[string]string{api.HeaderExportSHA256: hdr.Get(api.HeaderExportSHA256)})
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "nothing was imported") {
		t.Fatalf("an export over the bound: HTTP %d %s", status, b)
	}
	if m, err := c.nodes[0].srv.Store().Snapshot().ModelByUUID(rows.Model.UUID); err != nil || m != nil {
		t.Fatalf("after an import over the bound the controller holds %+v, %v", m, err)
	}
	// The hub's superuser token quiesces it; the controller's
	// administrator asking again with the same key gets the same answer.
	status, _, b = c.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), hubToken("superuser", ""))
	wantStep(t, "quiesce with the hub's superuser token", status, http.StatusOK, b)
	status, _, again := c.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), nil)
	wantStep(t, "quiesce asked again", status, http.StatusOK, again)
	if !bytes.Equal(b, again) {
		t.Errorf("quiesce asked again answered\n%s\nnot\n%s", again, b)
	}
	// Released (an abort), asked twice, the model takes changes again.
	for range 2 {
		status, _, b = c.migrationCall(t, "POST", model, "release", "mig-1/ABORTING/1", stepBody("mig-1"), hubToken("superuser", ""))
		wantStep(t, "release", status, http.StatusOK, b)
		var m api.Model
		if err := json.Unmarshal(b, &m); err != nil || m.Migration != nil {
			t.Fatalf("released model %s: %v", b, err)
		}
	}
	if _, err := admin.Model(model).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": "v"}}); err != nil {
		t.Fatalf("a write to the released model: %v", err)
	}
}

// TestEventStreamNamesRemovedModels: a model removed from the controller
// is named removed in the event stream (an aborted import is not:
// TestMigrationMovesAModelBetweenControllers).
func TestEventStreamNamesRemovedModels(t *testing.T) {
	c := newTestCluster(t, 1)
	cl := c.client(0)
	m, err := cl.AddModel(t.Context(), api.AddModelRequest{Name: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ws, reset := dialEvents(t, c, 0)
	if !slices.ContainsFunc(reset.Models, func(s api.ModelSummary) bool { return s.UUID == m.UUID }) {
		t.Fatalf("the reset frame does not name the model: %+v", reset.Models)
	}
	if _, err := cl.Model(m.UUID).Destroy(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("the event stream never named the model removed: %v", err)
		}
		if slices.Contains(f.Removed, m.UUID) {
			return
		}
	}
}
