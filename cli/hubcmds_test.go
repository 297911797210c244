package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/tests/testkit"
)

// TestAuditTimes: --since and --until take a time, a date or how long
// ago, and reach the hub as RFC 3339; anything else is refused before
// any request, saying what is accepted.
func TestAuditTimes(t *testing.T) {
	var got url.Values
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/audit", func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"entries": []any{}})
	})
	a, out, errb := atFakeHub(t, mux) // the test clock: 2026-11-21 21:33:10Z
	for _, c := range []struct {
		args         []string
		code         int
		since, until string
		stderr       string
	}{
		{[]string{"--since", "2026-11-01T09:00:00+01:00"}, 0, "2026-11-01T09:00:00+01:00", "", ""},
		{[]string{"--since", "2026-11-01", "--until", "2026-11-08"}, 0, "2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z", ""},
		{[]string{"--since", "90m"}, 0, "2026-11-21T20:03:10Z", "", ""},
		{[]string{"--since", "7d", "--until", "24h"}, 0, "2026-11-14T21:33:10Z", "2026-11-20T21:33:10Z", ""},
		{[]string{"--since", "2w"}, 0, "2026-11-07T21:33:10Z", "", ""},
		{[]string{"--since", "yesterday"}, 2, "", "", `ERROR --since "yesterday": give a time (2026-11-22T09:00:00Z), a date (2026-11-22) or how long ago (30m, 24h, 7d)`},
		{[]string{"--until", "-3h"}, 2, "", "", `ERROR --until "-3h": give a time`},
		{[]string{"--since", "d"}, 2, "", "", `ERROR --since "d": give a time`},
		{[]string{"--format", "xml"}, 2, "", "", `ERROR --format "xml": want one of tabular, json, csv`},
	} {
		got = nil
		out.Reset()
		errb.Reset()
		code := a.Run(t.Context(), append([]string{"audit"}, c.args...))
		if code != c.code || !strings.HasPrefix(errb.String(), c.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d, stderr %q", c.args, code, errb, c.code, c.stderr)
			continue
		}
		if c.code != 0 {
			if got != nil {
				t.Errorf("%q: the hub was asked (%v)", c.args, got)
			}
			continue
		}
		if got.Get("since") != c.since || got.Get("until") != c.until {
			t.Errorf("%q: sent since=%q until=%q, want %q and %q", c.args, got.Get("since"), got.Get("until"), c.since, c.until)
		}
	}
}

// TestAuditSaysWhoseModel: a model's name is its organization's, so when
// the entries listed span several organizations (a hub-wide auditor's),
// the table has an ORG column; the CSV export always has it.
func TestAuditSaysWhoseModel(t *testing.T) {
	entries := []map[string]any{
		{"at": "2026-11-21T21:00:00Z", "actor": "ci-demo", "org": "demo", "operation": "deploy", "model": "shop", "status": 201, "result": "ok",
			"details": map[string]any{"target": "kvstore"}},
		{"at": "2026-11-21T20:00:00Z", "actor": "ci-globex", "org": "globex", "operation": "deploy", "model": "shop", "status": 201, "result": "ok",
			"details": map[string]any{"target": "webapp"}},
	}
	hostile := []map[string]any{
		{"at": "2026-11-21T22:00:00Z", "actor": `=HYPERLINK("http://evil.example","x")`, "operation": "login-client-credentials", "status": 401, "result": "denied"},
		{"at": "2026-11-21T22:00:00Z", "actor": "\x1b[1A\x1b[2K", "operation": "login-client-credentials", "status": 401, "result": "denied"},
	}
	var answer []map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/audit", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"entries": answer})
	})
	a, out, errb := atFakeHub(t, mux)
	for _, c := range []struct {
		entries []map[string]any
		format  string
		want    string
	}{
		{entries, "tabular", `TIME                  ACTOR      OPERATION  TARGET   ORG     MODEL  STATUS  RESULT
2026-11-21 21:00:00Z  ci-demo    deploy     kvstore  demo    shop   201     ok
2026-11-21 20:00:00Z  ci-globex  deploy     webapp   globex  shop   201     ok
`},
		{entries[:1], "tabular", `TIME                  ACTOR    OPERATION  TARGET   MODEL  STATUS  RESULT
2026-11-21 21:00:00Z  ci-demo  deploy     kvstore  shop   201     ok
`},
		{entries[:1], "csv", `TIME,ACTOR,OPERATION,TARGET,ORG,MODEL,STATUS,RESULT
2026-11-21T21:00:00Z,ci-demo,deploy,kvstore,demo,shop,201,ok
`},
		// A failed login records the client id it was given, whoever gave
		// it: made safe to open in a spreadsheet, and to print.
		{hostile, "csv", `TIME,ACTOR,OPERATION,TARGET,ORG,MODEL,STATUS,RESULT
2026-11-21T22:00:00Z,"'=HYPERLINK(""http://evil.example"",""x"")",login-client-credentials,-,-,-,401,denied
2026-11-21T22:00:00Z,\x1b[1A\x1b[2K,login-client-credentials,-,-,-,401,denied
`},
		{hostile, "tabular", `TIME                  ACTOR                                  OPERATION                 TARGET  MODEL  STATUS  RESULT
2026-11-21 22:00:00Z  =HYPERLINK("http://evil.example","x")  login-client-credentials  -       -      401     denied
2026-11-21 22:00:00Z  \x1b[1A\x1b[2K                         login-client-credentials  -       -      401     denied
`},
		// A refused login that named nobody (the JSON has no actor).
		{[]map[string]any{{"at": "2026-11-21T22:00:00Z", "operation": "login-throttled", "status": 429, "result": "denied"}}, "tabular",
			`TIME                  ACTOR  OPERATION        TARGET  MODEL  STATUS  RESULT
2026-11-21 22:00:00Z  -      login-throttled  -       -      429     denied
`},
		// What the hub did by itself answered no request: no status.
		{[]map[string]any{{"at": "2026-11-23T05:16:20Z", "actor": "hub", "operation": "controller rewound", "result": "ok"}}, "tabular",
			`TIME                  ACTOR  OPERATION           TARGET  MODEL  STATUS  RESULT
2026-11-23 05:16:20Z  hub    controller rewound  -       -      -       ok
`},
	} {
		answer = c.entries
		out.Reset()
		if code := a.Run(t.Context(), []string{"audit", "--format", c.format}); code != 0 || out.String() != c.want {
			t.Errorf("audit --format %s of %d entries: exit %d %s\n%s\nwant\n%s", c.format, len(c.entries), code, errb, out, c.want)
		}
	}
}

// TestHubUnreachable: a hub that does not answer is named a hub, with the
// hub's remedy, and a 401 the session cannot get past says to log in.
func TestHubUnreachable(t *testing.T) {
	a, out, errb := atFakeHub(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"code":"unauthorized","message":"authentication required"}`)
	}))
	if code := a.Run(t.Context(), []string{"models"}); code != 1 || out.Len() != 0 ||
		errb.String() != "ERROR authentication required\n(the hub session has ended and could not be renewed; run 'drover login' again)\n" {
		t.Errorf("a session the hub refuses: exit %d\n%s%s", code, out, errb)
	}
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	if err := (&clientstore.Store{Dir: dir}).Update(func(s *clientstore.State) error {
		s.Controllers["hub"].APIAddresses = []string{addr}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := a.Run(t.Context(), []string{"models"}); code != 1 ||
		!strings.HasPrefix(errb.String(), "ERROR cannot reach the hub at "+addr+": ") ||
		!strings.HasSuffix(errb.String(), "\n(is the hub running? 'drover show-controller' shows its address)\n") {
		t.Errorf("a hub that does not answer: exit %d\n%s", code, errb)
	}
}

// TestHubControllersTable: the controllers behind a hub, a field the hub
// left out shown as "-", and event indexes as integers however large.
func TestHubControllersTable(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/controllers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"controllers":[{"name":"east","region":"east","status":"connected","event-index":12345678,"last-seen":"2026-11-21T21:30:00.5Z","ca-cert":"PEM"},
			{"name":"north","region":"north","status":"connected","health":{"models-not-indexed":2,"model-limit":20000}},
			{"name":"west","region":"west","cloud":"aws","status":"unknown","deprecated":true}]}`))
	})
	mux.HandleFunc("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"user":"alice@example.com","access":"login"}`))
	})
	var patched []string
	mux.HandleFunc("PATCH /v1/controllers/{name}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		patched = append(patched, r.PathValue("name")+" "+string(b))
		_, _ = w.Write([]byte(`{}`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"controllers"}); code != 0 {
		t.Fatalf("controllers: exit %d: %s", code, errb)
	}
	want := `Controller  Region  Cloud  Health                                         Last contact          Event index
east        east    -      connected                                      2026-11-21 21:30:00Z  12345678
north       north   -      connected, 2 models not indexed (limit 20000)  -                     -
west        west    aws    unknown, deprecated                            -                     -
`
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("controllers:\n%s\nwant it to end with\n%s", out, want)
	}
	// Scripts get them too, without their CA certificates.
	out.Reset()
	if code := a.Run(t.Context(), []string{"controllers", "--format", "json"}); code != 0 {
		t.Fatalf("controllers --format json: exit %d: %s", code, errb)
	}
	var doc struct {
		Controllers map[string]struct {
			Behind []map[string]any `json:"controllers-behind"`
		} `json:"controllers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	behind := doc.Controllers["hub"].Behind
	if len(behind) != 3 || behind[0]["name"] != "east" || behind[0]["event-index"] != float64(12345678) || behind[0]["ca-cert"] != nil {
		t.Errorf("controllers behind the hub in JSON: %+v", behind)
	}
	// set-controller-deprecated, and --false.
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"set-controller-deprecated", "west"}, "Controller \"west\" is deprecated: it takes no new models.\n"},
		{[]string{"set-controller-deprecated", "west", "--false"}, "Controller \"west\" takes new models again.\n"},
	} {
		out.Reset()
		if code := a.Run(t.Context(), c.args); code != 0 || out.String() != c.out {
			t.Errorf("%q: exit %d %s\n%s", c.args, code, errb, out)
		}
	}
	if want := []string{`west {"deprecated":true}`, `west {"deprecated":false}`}; !slices.Equal(patched, want) {
		t.Errorf("calls %q, want %q", patched, want)
	}
}

// TestModelsOnALostController: at a hub, a model on a controller the hub
// has lost shows what the hub last heard, and says so; a model adopted
// from its controller, which has no owner yet, shows '-'.
func TestModelsOnALostController(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"models":[
			{"uuid":"6a1f0c2e-0000-4000-8000-00000000000c","name":"prod","owner":"alice@example.com","life":"alive","status":"available",
			 "controller":"east","controller-status":"disconnected","controller-uuid":"c1","cloud":"localhost","region":"east","application-count":2},
			{"uuid":"6a1f0c2e-0000-4000-8000-00000000000d","name":"test","owner":"alice@example.com","life":"alive","status":"available",
			 "controller":"west","controller-uuid":"c2","cloud":"localhost","region":"west"},
			{"uuid":"6a1f0c2e-0000-4000-8000-00000000000e","name":"found","life":"alive","status":"available",
			 "controller":"west","controller-uuid":"c2","cloud":"localhost","region":"west"}]}`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"models"}); code != 0 {
		t.Fatalf("models: exit %d: %s", code, errb)
	}
	want := `Controller: hub

Model  Controller  Cloud/Region    Type   Status                               Owner              Machines  Units  Access  Last connection
found  west        localhost/west  local  available                            -                  0         0      -       -
prod   east        localhost/east  local  available (controller disconnected)  alice@example.com  0         0      -       -
test   west        localhost/west  local  available                            alice@example.com  0         0      -       -
`
	if out.String() != want {
		t.Errorf("models:\n%s\nwant\n%s", out, want)
	}
	out.Reset()
	if code := a.Run(t.Context(), []string{"models", "--format", "json"}); code != 0 || !strings.Contains(out.String(), `"controller-status":"disconnected"`) ||
		!strings.Contains(out.String(), `"model-type":"iaas","type":"local","is-controller":false`) {
		t.Errorf("models --format json: exit %d: %s", code, out)
	}
	// As Juju's: name is OWNER/NAME, short-name the model's own.
	var ms struct {
		Models []struct {
			Name      string `json:"name"`
			ShortName string `json:"short-name"`
		} `json:"models"`
	}
	if err := json.Unmarshal(out.Bytes(), &ms); err != nil || len(ms.Models) != 3 ||
		ms.Models[1].Name != "alice@example.com/prod" || ms.Models[1].ShortName != "prod" || ms.Models[0].Name != "found" {
		t.Errorf("models --format json: %+v %v; want name alice@example.com/prod, short-name prod", ms, err)
	}
}

// TestShowModelOnALostController: show-model at a hub shows what the hub
// knows of a model whose controller it cannot reach, without its config,
// rather than failing.
func TestShowModelOnALostController(t *testing.T) {
	const id = "6a1f0c2e-0000-4000-8000-00000000000e"
	mux := http.NewServeMux()
	model := `{"uuid":"` + id + `","name":"prod","owner":"alice@example.com","life":"alive","status":"available",
		"controller":"east","controller-status":"disconnected","controller-uuid":"c1","cloud":"localhost","region":"east"}`
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"models":[` + model + `]}`))
	})
	mux.HandleFunc("GET /v1/models/"+id, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(model))
	})
	mux.HandleFunc("GET /v1/models/"+id+"/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeUnavailable, Message: "controller east is unavailable behind the hub"})
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"show-model", "prod"}); code != 0 {
		t.Fatalf("show-model: exit %d: %s", code, errb)
	}
	for _, want := range []string{"controller-status: disconnected", "controller-name: hub/east", "current: available",
		"name: alice@example.com/prod", "short-name: prod"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show-model lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), "config:") {
		t.Errorf("show-model shows a config it could not read:\n%s", out)
	}
}

// TestOthersTextCannotDriveTheTerminal: text drover prints that others
// wrote (here a model's status from its controller, and a refusal's
// message) shows control characters as escapes, in tables and in errors,
// and an error keeps its hint on its own line.
func TestOthersTextCannotDriveTheTerminal(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"models":[{"uuid":"6a1f0c2e-0000-4000-8000-00000000000c","name":"prod","owner":"alice@example.com",
			"life":"alive","status":"\u001b[2K\u001b[1Aactive","controller":"east","controller-uuid":"c1","cloud":"localhost","region":"east"}]}`))
	})
	mux.HandleFunc("GET /v1/groups", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"code":"forbidden","message":"no\u001b]0;pwned\u0007"}`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"models"}); code != 0 || strings.ContainsRune(out.String(), 0x1b) ||
		!strings.Contains(out.String(), `\x1b[2K\x1b[1Aactive`) {
		t.Fatalf("models: exit %d %q %s", code, out, errb)
	}
	if code := a.Run(t.Context(), []string{"groups"}); code != 1 || strings.ContainsRune(errb.String(), 0x1b) ||
		!strings.HasPrefix(errb.String(), `ERROR no\x1b]0;pwned\a`+"\n(") {
		t.Fatalf("groups: exit %d %q", code, errb)
	}
}

// TestModelsOfAnotherUser: models --user asks the hub for that user's
// models, named as that user would name them; --all is for the hub's
// administrators; neither goes with the other, and --user is a hub's.
func TestModelsOfAnotherUser(t *testing.T) {
	var asked []string
	access := "login"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"models":[{"uuid":"6a1f0c2e-0000-4000-8000-00000000000a","name":"shop","owner":"bob@example.com","life":"alive","status":"available","org":"acme","controller":"east","controller-uuid":"x","region":"east","application-count":1,"unit-count":2,"machine-count":2}]}`))
	})
	mux.HandleFunc("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"user":"alice@example.com","access":"` + access + `"}`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"models", "--user", "bob@example.com"}); code != 0 {
		t.Fatalf("models --user: exit %d %s", code, errb)
	}
	if want := "shop   east        east          local  available  bob@example.com  2         2      -       -"; !strings.Contains(out.String(), want) ||
		!slices.Equal(asked, []string{"user=bob%40example.com"}) {
		t.Errorf("models --user: asked %q\n%s\nwant a row\n%s", asked, out, want)
	}
	errb.Reset()
	if code := a.Run(t.Context(), []string{"models", "--all"}); code == 0 || !strings.Contains(errb.String(), `--all lists every model at hub "hub": its administrators only`) {
		t.Errorf("models --all as a member: exit %d %s", code, errb)
	}
	access = "superuser"
	out.Reset()
	if code := a.Run(t.Context(), []string{"models", "--all"}); code != 0 || !strings.Contains(out.String(), "bob@example.com/shop") {
		t.Errorf("models --all as an administrator: exit %d %s\n%s", code, errb, out)
	}
	errb.Reset()
	if code := a.Run(t.Context(), []string{"models", "--all", "--user", "bob@example.com"}); code == 0 || !strings.Contains(errb.String(), "--all and --user go alone") {
		t.Errorf("models --all --user: exit %d %s", code, errb)
	}
}

// TestSetModelOwner: set-model-owner names the model as drover models
// does (here another owner's, OWNER/NAME), sends its UUID and the new
// owner to the hub, and says whose it is now.
func TestSetModelOwner(t *testing.T) {
	const id = "6a1f0c2e-0000-4000-8000-00000000000a"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []api.Model{{UUID: id, Name: "shop", Owner: "bob@example.com"}}})
	})
	var sent []string
	mux.HandleFunc("PATCH /v1/models/{uuid}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent = append(sent, r.PathValue("uuid")+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"uuid":"` + id + `","name":"shop","owner":"carol@example.com"}`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"set-model-owner", "bob@example.com/shop", "carol@example.com"}); code != 0 ||
		out.String() != "Model \"shop\" is now owned by carol@example.com.\n" {
		t.Fatalf("set-model-owner: exit %d %s\n%s", code, errb, out)
	}
	if want := []string{id + ` {"owner":"carol@example.com"}`}; !slices.Equal(sent, want) {
		t.Errorf("calls %q, want %q", sent, want)
	}
}
