package hooktools

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

func action(params map[string]any) func(*fixture) {
	return func(f *fixture) { f.action(params) }
}

func TestUnitTools(t *testing.T) {
	runCases(t, []toolCase{
		{name: "config-get json", argv: []string{"config-get", "--format=json"}, stdout: `{"b":true,"n":7,"name":"x"}` + "\n"},
		{name: "config-get all", argv: []string{"config-get", "--format=json", "--all"}, stdout: `{"b":true,"f":null,"n":7,"name":"x"}` + "\n"},
		{name: "config-get -a", argv: []string{"config-get", "-a", "--format=json"}, stdout: `{"b":true,"f":null,"n":7,"name":"x"}` + "\n"},
		{name: "config-get key", argv: []string{"config-get", "n"}, stdout: "7\n"},
		{name: "config-get bool smart", argv: []string{"config-get", "b"}, stdout: "True\n"},
		{name: "config-get unknown json", argv: []string{"config-get", "--format=json", "zzz"}, stdout: "null\n"},
		{name: "config-get unknown smart", argv: []string{"config-get", "zzz"}},
		{name: "config-get smart map", argv: []string{"config-get"}, stdout: "b: true\n\"n\": 7\nname: x\n"},

		{name: "is-leader smart", argv: []string{"is-leader"}, stdout: "False\n"},
		{name: "is-leader json", setup: leader, argv: []string{"is-leader", "--format=json"}, stdout: "true\n"},
		{name: "is-leader error", setup: func(f *fixture) { f.remote.leaderErr = errors.New("no lease") }, argv: []string{"is-leader"}, code: 1, stderr: "leadership status unknown: no lease"},

		{name: "status-get smart", argv: []string{"status-get"}, stdout: "active\n"},
		{name: "status-get data json", argv: []string{"status-get", "--include-data", "--format=json"}, stdout: `{"message":"ok","status":"active","status-data":{"k":"v"}}` + "\n"},
		{name: "status-get json no data", argv: []string{"status-get", "--format=json"}, stdout: `{"status":"active"}` + "\n"},
		{name: "status-get app non-leader", argv: []string{"status-get", "--application=true"}, code: 1, stderr: "this unit is not the leader"},
		{name: "status-get app", setup: leader, argv: []string{"status-get", "--include-data", "--format=json", "--application=True"},
			stdout: `{"application-status":{"message":"w","status":"waiting","status-data":{},"units":{"app/0":{"message":"ok","status":"active","status-data":{"k":"v"}}}}}` + "\n"},
		{name: "status-get app smart", setup: leader, argv: []string{"status-get", "--application"}, stdout: "waiting\n"},
		{name: "status-get app=False", argv: []string{"status-get", "--application=False"}, stdout: "active\n"},

		{name: "status-set", argv: []string{"status-set", "--application=False", "active", "--", "msg"}},
		{name: "status-set invalid", argv: []string{"status-set", "error", "x"}, code: 2, stderr: `invalid status "error"`},
		{name: "status-set none", argv: []string{"status-set"}, code: 2, stderr: "invalid args"},
		{name: "status-set app non-leader", argv: []string{"status-set", "--application=True", "active"}, code: 1, stderr: "this unit is not the leader"},
		{name: "status-set bad bool", argv: []string{"status-set", "--application=maybe", "active"}, code: 2, stderr: `invalid value "maybe" for flag --application`},
		{name: "status-set extra", argv: []string{"status-set", "active", "a", "b"}, code: 2, stderr: "unrecognized args"},

		{name: "version-set", argv: []string{"application-version-set", "--", "1.2"}},
		{name: "version-set none", argv: []string{"application-version-set"}, code: 2, stderr: "no version specified"},

		{name: "juju-log", argv: []string{"juju-log", "--log-level", "WARNING", "--", "hello", "world"}},
		{name: "juju-log none", argv: []string{"juju-log"}, code: 2, stderr: "no message specified"},

		{name: "unit-get private", argv: []string{"unit-get", "private-address"}, stdout: "10.0.0.9\n"},
		{name: "unit-get public json", argv: []string{"unit-get", "--format=json", "public-address"}, stdout: `"1.2.3.4"` + "\n"},
		{name: "unit-get bad", argv: []string{"unit-get", "x"}, code: 2, stderr: `unknown setting "x"`},

		{name: "leader-get", setup: func(f *fixture) { f.remote.leaderSet = map[string]string{"a": "b"} }, argv: []string{"leader-get", "--format=json"}, stdout: `{"a":"b"}` + "\n"},
		{name: "leader-get key", setup: func(f *fixture) { f.remote.leaderSet = map[string]string{"a": "b"} }, argv: []string{"leader-get", "a"}, stdout: "b\n"},
		{name: "leader-set non-leader", argv: []string{"leader-set", "a=b"}, code: 1, stderr: "this unit is not the leader"},
		{name: "leader-set", setup: leader, argv: []string{"leader-set", "a=b"}},
	})
}

func TestActionTools(t *testing.T) {
	params := map[string]any{"a": map[string]any{"b": "c", "n": 1}, "s": "x"}
	runCases(t, []toolCase{
		{name: "get all", setup: action(params), argv: []string{"action-get", "--format=json"}, stdout: `{"a":{"b":"c","n":1},"s":"x"}` + "\n"},
		{name: "get empty", setup: action(nil), argv: []string{"action-get", "--format=json"}, stdout: "{}\n"},
		{name: "get dotted", setup: action(params), argv: []string{"action-get", "a.b"}, stdout: "c\n"},
		{name: "get dotted map", setup: action(params), argv: []string{"action-get", "--format=json", "a"}, stdout: `{"b":"c","n":1}` + "\n"},
		{name: "get missing", setup: action(params), argv: []string{"action-get", "--format=json", "a.z.q"}, stdout: "null\n"},
		{name: "get outside action", argv: []string{"action-get"}, code: 1, stderr: "not running an action"},
		{name: "set", setup: action(nil), argv: []string{"action-set", "a.b=1", "c=2"}},
		{name: "set reserved", setup: action(nil), argv: []string{"action-set", "stdout=1"}, code: 2, stderr: `cannot set reserved action key "stdout"`},
		{name: "set reserved nested", setup: action(nil), argv: []string{"action-set", "a.stderr-encoding=1"}, code: 2, stderr: "reserved"},
		{name: "set bad key", setup: action(nil), argv: []string{"action-set", "A=1"}, code: 2, stderr: `key "A" must start and end with lowercase alphanumeric`},
		{name: "set no equals", setup: action(nil), argv: []string{"action-set", "a"}, code: 2, stderr: "must be of the form key...=value"},
		{name: "set outside action", argv: []string{"action-set", "a=1"}, code: 1, stderr: "not running an action"},
		{name: "log", setup: action(nil), argv: []string{"action-log", "--", "working", "hard"}},
		{name: "log none", setup: action(nil), argv: []string{"action-log"}, code: 2, stderr: "no message specified"},
		{name: "fail", setup: action(nil), argv: []string{"action-fail", "--", "bad"}},
		{name: "fail outside", argv: []string{"action-fail"}, code: 1, stderr: "not running an action"},
	})
}

func TestMachineTools(t *testing.T) {
	runCases(t, []toolCase{
		{name: "opened json", argv: []string{"opened-ports", "--format=json"}, stdout: `["icmp","80/tcp","1000-2000/udp"]` + "\n"},
		{name: "opened smart", argv: []string{"opened-ports"}, stdout: "icmp\n80/tcp\n1000-2000/udp\n"},
		{name: "opened endpoints", argv: []string{"opened-ports", "--endpoints", "--format=json"}, stdout: `["icmp (*)","80/tcp (*)","1000-2000/udp (a, b)"]` + "\n"},
		{name: "opened none", setup: func(f *fixture) { f.cfg.OpenedPorts = nil }, argv: []string{"opened-ports", "--format=json"}, stdout: "[]\n"},
		{name: "open", argv: []string{"open-port", "8080"}},
		{name: "open tcp", argv: []string{"open-port", "8080/tcp"}},
		{name: "open range", argv: []string{"open-port", "1000-2000/udp", "--endpoints", "a,b"}},
		{name: "open icmp", argv: []string{"open-port", "icmp"}},
		{name: "open bad", argv: []string{"open-port", "http"}, code: 2, stderr: `invalid port "http"`},
		{name: "open bad proto", argv: []string{"open-port", "80/sctp"}, code: 2, stderr: "invalid protocol"},
		{name: "open reversed", argv: []string{"open-port", "90-80"}, code: 2, stderr: "invalid port range"},
		{name: "open none", argv: []string{"open-port"}, code: 2, stderr: "no port or range specified"},
		{name: "close", argv: []string{"close-port", "80"}},

		{name: "network-get json", argv: []string{"network-get", "--format=json", "-r", "1", "db"},
			stdout: `{"bind-addresses":[{"mac-address":"aa","interface-name":"eth0","addresses":[{"hostname":"","value":"10.0.0.9","cidr":"10.0.0.0/24"}]}],"egress-subnets":["10.0.0.9/32"],"ingress-addresses":["10.0.0.9"]}` + "\n"},
		{name: "network-get ingress", argv: []string{"network-get", "db", "--ingress-address"}, stdout: "10.0.0.9\n"},
		{name: "network-get bind", argv: []string{"network-get", "db", "--bind-address", "--format=json"}, stdout: `"10.0.0.9"` + "\n"},
		{name: "network-get egress", argv: []string{"network-get", "db", "--egress-subnets"}, stdout: "10.0.0.9/32\n"},
		{name: "network-get two", argv: []string{"network-get", "db", "--egress-subnets", "--ingress-address", "--format=json"}, stdout: `{"egress-subnets":["10.0.0.9/32"],"ingress-address":"10.0.0.9"}` + "\n"},
		{name: "network-get primary", argv: []string{"network-get", "db", "--primary-address"}, stdout: "10.0.0.9\n"},
		{name: "network-get unknown", argv: []string{"network-get", "x"}, code: 1, stderr: `no network config found for binding "x"`},
		{name: "network-get none", argv: []string{"network-get"}, code: 2, stderr: "no arguments specified"},

		{name: "goal-state json", argv: []string{"goal-state", "--format=json"},
			stdout: `{"units":{"app/0":{"status":"active","since":"2024-05-06 07:08:09Z"}},"relations":{"db":{"mysql":{"status":"joined","since":"2024-05-06 07:08:09Z"}}}}` + "\n"},

		{name: "state-get all", argv: []string{"state-get", "--format=json"}, stdout: `{"s":"1"}` + "\n"},
		{name: "state-get key", argv: []string{"state-get", "s"}, stdout: "1\n"},
		{name: "state-get missing", argv: []string{"state-get", "zz"}},
		{name: "state-get missing strict", argv: []string{"state-get", "--strict", "zz"}, code: 1, stderr: "not found"},
		{name: "state-set", argv: []string{"state-set", "--file", "-", "b=2"}, stdin: str(`{"a": "1"}`)},
		{name: "state-set big key", argv: []string{"state-set", longKey + "=1"}, code: 1, stderr: "limit"},
		{name: "state-delete", argv: []string{"state-delete", "s"}},
		{name: "state-delete none", argv: []string{"state-delete"}, code: 2, stderr: "specify a key"},

		{name: "storage-list", argv: []string{"storage-list", "--format=json"}, stdout: "[]\n"},
		{name: "storage-get none", argv: []string{"storage-get"}, code: 2, stderr: "no storage instance specified"},
		{name: "storage-get id", argv: []string{"storage-get", "-s", "data/0"}, code: 1, stderr: "not found"},
		{name: "credential-get", argv: []string{"credential-get", "--format=json"}, code: 1, stderr: "not supported on this cloud"},
		{name: "juju-reboot", argv: []string{"juju-reboot", "--now"}, code: 1, stderr: "not supported"},
		{name: "resource-get", argv: []string{"resource-get", "conf"}, stdout: "/resources/conf/conf.txt"},
		{name: "resource-get not uploaded", argv: []string{"resource-get", "img"}, code: 1, stderr: `could not download resource: resource "img" not found`},
		{name: "resource-get none", argv: []string{"resource-get"}, code: 2, stderr: "missing required resource name"},
	})
}

var longKey = func() string {
	b := make([]byte, 300)
	for i := range b {
		b[i] = 'k'
	}
	return string(b)
}()

func TestHelp(t *testing.T) {
	f := newFixture()
	for _, name := range Names() {
		res := run(t, f.ctx(t), nil, name, "--help")
		if res.Code != 0 || len(res.Stdout) == 0 {
			t.Errorf("%s --help: code %d, stdout %q", name, res.Code, res.Stdout)
		}
	}
	res := run(t, f.ctx(t), nil, "relation-get", "-h")
	want := "Usage: relation-get [options] <key> <unit id>\n\nSummary:\nGet relation settings.\n\nOptions:\n--app  (= false)\n"
	if got := string(res.Stdout); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("help = %q", got)
	}
}

// TestJujuReboot: on a machine its agent can reboot, juju-reboot records a
// reboot after the hook, and --now one at once, ending the hook; in an
// action it fails.
func TestJujuReboot(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		action bool
		want   hookctx.RebootRequest
		code   int
		killed bool
	}{
		{argv: []string{"juju-reboot"}, want: hookctx.RebootAfter},
		{argv: []string{"juju-reboot", "--now"}, want: hookctx.RebootNow, killed: true},
		{argv: []string{"juju-reboot", "extra"}, code: 2},
		{argv: []string{"juju-reboot"}, action: true, code: 1},
	} {
		f := newFixture()
		f.cfg.CanReboot = true
		killed := false
		f.cfg.RebootNow = func() { killed = true }
		if tc.action {
			f.action(nil)
		}
		hc := f.ctx(t)
		res := run(t, hc, nil, tc.argv[0], tc.argv[1:]...)
		if res.Code != tc.code || hc.Reboot() != tc.want || killed != tc.killed {
			t.Errorf("%v (action %v): code %d, request %v, hook ended %v (stderr %q); want %d, %v, %v",
				tc.argv, tc.action, res.Code, hc.Reboot(), killed, res.Stderr, tc.code, tc.want, tc.killed)
		}
	}
}
