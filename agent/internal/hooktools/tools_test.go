package hooktools

import (
	"github.com/droverhq/drover/agent/internal/hookctx"
	"strings"
	"testing"
)

type toolCase struct {
	name   string
	setup  func(*fixture)
	argv   []string
	stdin  *string
	code   int
	stdout string // exact, unless anyOut
	anyOut bool
	stderr string // substring of stderr; "" means stderr must be empty
}

func hook(name, remote string) func(*fixture) {
	return func(f *fixture) { f.relationHook(name, remote) }
}

func leader(f *fixture) { f.remote.leader = true }

func runCases(t *testing.T, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			if tc.setup != nil {
				tc.setup(f)
			}
			res := run(t, f.ctx(t), tc.stdin, tc.argv[0], tc.argv[1:]...)
			if res.Code != tc.code {
				t.Errorf("code = %d, want %d (stderr %q)", res.Code, tc.code, res.Stderr)
			}
			if !tc.anyOut && string(res.Stdout) != tc.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tc.stdout)
			}
			if tc.stderr == "" && len(res.Stderr) != 0 {
				t.Errorf("stderr = %q, want empty", res.Stderr)
			}
			if tc.stderr != "" && !strings.Contains(string(res.Stderr), tc.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tc.stderr)
			}
			if tc.code != 0 && !strings.HasPrefix(string(res.Stderr), "ERROR ") {
				t.Errorf("stderr = %q, want an ERROR line", res.Stderr)
			}
		})
	}
}

func TestRelationTools(t *testing.T) {
	runCases(t, []toolCase{
		{name: "get json all", argv: []string{"relation-get", "--format=json", "-r", "db:1", "-", "mysql/0"}, stdout: `{"host":"10.0.0.1","port":"3306"}` + "\n"},
		{name: "get default unit smart", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-get"}, stdout: "host: 10.0.0.1\nport: \"3306\"\n"},
		{name: "get key", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-get", "host"}, stdout: "10.0.0.1\n"},
		{name: "get key json null", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-get", "--format", "json", "nope"}, stdout: "null\n"},
		{name: "get missing key smart", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-get", "nope"}},
		{name: "get bare id", argv: []string{"relation-get", "--format=json", "-r", "1", "-", "mysql/0"}, anyOut: true},
		{name: "get anything prefix", argv: []string{"relation-get", "--format=json", "-r", "x:y:1", "-", "mysql/0"}, anyOut: true},
		{name: "get interleaved", argv: []string{"relation-get", "-", "mysql/0", "--format=json", "--relation=db:1"}, stdout: `{"host":"10.0.0.1","port":"3306"}` + "\n"},
		{name: "get r attached", argv: []string{"relation-get", "-r1", "host", "mysql/0"}, stdout: "10.0.0.1\n"},
		{name: "get app", argv: []string{"relation-get", "--format=json", "-r", "db:1", "--app", "-", "mysql"}, stdout: `{"password":"12345"}` + "\n"},
		{name: "get app by unit name", argv: []string{"relation-get", "--format=json", "-r", "db:1", "--app", "-", "mysql/0"}, stdout: `{"password":"12345"}` + "\n"},
		{name: "get app default", setup: hook("db-relation-changed", ""), argv: []string{"relation-get", "--format=json"}, stdout: `{"password":"12345"}` + "\n"},
		{name: "get app flag no name", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-get", "--app", "--format=json", "password"}, stdout: `"12345"` + "\n"},
		{name: "get empty bag json", argv: []string{"relation-get", "--format=json", "-r", "1", "-", "mysql/1"}, stdout: "{}\n"},
		{name: "get no relation", argv: []string{"relation-get", "-", "mysql/0"}, code: 2, stderr: "no relation id specified"},
		{name: "get unknown relation", argv: []string{"relation-get", "-r", "db:9", "-", "mysql/0"}, code: 2, stderr: "relation not found"},
		{name: "get invalid relation", argv: []string{"relation-get", "-r", "db:x", "-", "mysql/0"}, code: 2, stderr: `invalid value "db:x" for flag -r: invalid relation id`},
		{name: "get no target", setup: func(f *fixture) {
			f.cfg.Hook = "db-relation-broken"
			f.cfg.Relation = &hookctx.HookRelation{ID: 1, RemoteApp: ""}
		}, argv: []string{"relation-get"}, code: 2, stderr: "no unit or application specified"},
		{name: "get app name without --app", argv: []string{"relation-get", "-r", "1", "-", "mysql"}, code: 2, stderr: `expected unit name, got application name "mysql"`},
		{name: "get bad flag", argv: []string{"relation-get", "--bogus"}, code: 2, stderr: "flag provided but not defined: --bogus"},
		{name: "get bad format", argv: []string{"relation-get", "--format=xml", "-r", "1", "-", "mysql/0"}, code: 2, stderr: `unknown format "xml"`},
		{name: "get extra args", argv: []string{"relation-get", "-r", "1", "-", "mysql/0", "x"}, code: 2, stderr: `unrecognized args: ["x"]`},
		{name: "get yaml", argv: []string{"relation-get", "--format=yaml", "-r", "1", "port", "mysql/0"}, stdout: "\"3306\"\n"},

		{name: "list json", argv: []string{"relation-list", "--format=json", "-r", "db:1"}, stdout: `["mysql/0","mysql/1"]` + "\n"},
		{name: "list smart", argv: []string{"relation-list", "-r", "1"}, stdout: "mysql/0\nmysql/1\n"},
		{name: "list joined adds remote", setup: hook("db-relation-joined", "mysql/2"), argv: []string{"relation-list", "--format=json"}, stdout: `["mysql/0","mysql/1","mysql/2"]` + "\n"},
		{name: "list departed drops remote", setup: func(f *fixture) {
			f.relationHook("db-relation-departed", "mysql/1")
			f.cfg.Relation.DepartingUnit = "mysql/1"
		}, argv: []string{"relation-list", "--format=json"}, stdout: `["mysql/0"]` + "\n"},
		{name: "list empty json", setup: func(f *fixture) { f.cfg.Relations[0].Members = nil }, argv: []string{"relation-list", "--format=json", "-r", "1"}, stdout: "[]\n"},
		{name: "list empty smart", setup: func(f *fixture) { f.cfg.Relations[0].Members = nil }, argv: []string{"relation-list", "-r", "1"}},
		{name: "list app", argv: []string{"relation-list", "--app", "--format=json", "-r", "db:1"}, stdout: `"mysql"` + "\n"},
		{name: "list peer app", argv: []string{"relation-list", "--app", "-r", "peers:2"}, stdout: "app\n"},
		{name: "list no relation", argv: []string{"relation-list"}, code: 2, stderr: "no relation id specified"},

		{name: "ids json", argv: []string{"relation-ids", "--format=json", "db"}, stdout: `["db:1"]` + "\n"},
		{name: "ids default", setup: hook("db-relation-changed", "mysql/0"), argv: []string{"relation-ids"}, stdout: "db:1\n"},
		{name: "ids none json", argv: []string{"relation-ids", "--format=json", "website"}, stdout: "[]\n"},
		{name: "ids dead excluded", setup: func(f *fixture) { f.cfg.Relations[0].Life = "dead" }, argv: []string{"relation-ids", "--format=json", "db"}, stdout: "[]\n"},
		{name: "ids no endpoint", argv: []string{"relation-ids"}, code: 2, stderr: "no endpoint name specified"},

		{name: "model-get", argv: []string{"relation-model-get", "--format=json", "-r", "db:1"}, stdout: `{"uuid":"uuid-m"}` + "\n"},
		{name: "model-get smart", argv: []string{"relation-model-get", "-r", "1"}, stdout: "uuid: uuid-m\n"},

		{name: "set args", argv: []string{"relation-set", "-r", "1", "a=b"}},
		{name: "set file stdin", argv: []string{"relation-set", "-r", "db:1", "--file", "-"}, stdin: str(`{"a": "b"}`)},
		{name: "set app non-leader", argv: []string{"relation-set", "-r", "db:1", "--app", "a=b"}, code: 1, stderr: "cannot write relation settings"},
		{name: "set app leader", setup: leader, argv: []string{"relation-set", "-r", "db:1", "--app", "--file", "-"}, stdin: str(`{"a": "b"}`)},
		{name: "set app=True", setup: leader, argv: []string{"relation-set", "-r", "db:1", "--app=True", "a=b"}},
		{name: "set bad kv", argv: []string{"relation-set", "-r", "1", "ab"}, code: 2, stderr: `expected "key=value", got "ab"`},
		{name: "set no relation", argv: []string{"relation-set", "a=b"}, code: 2, stderr: "no relation id specified"},
		{name: "set bad yaml", argv: []string{"relation-set", "-r", "1", "--file", "-"}, stdin: str("[1, 2]"), code: 1, stderr: "ERROR"},
		{name: "set too large", argv: []string{"relation-set", "-r", "1", "--file", "-"}, stdin: str(`{"a": "` + strings.Repeat("x", 16<<20) + `"}`), code: 1, stderr: "limit"},
		{name: "set format deprecated", argv: []string{"relation-set", "-r", "1", "--format=json", "a=b"}, stderr: "deprecated"},
	})
}
