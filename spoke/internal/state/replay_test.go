package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
	"github.com/hashicorp/raft"
)

// The replay fixture is a raft log and a snapshot written by a released
// controller, with what a store holds after them. It proves that this code
// still reads every existing data directory: the log replays to the same
// store and the same results, the snapshot restores to the same store, and
// both re-encode to the very same bytes. Never regenerate it to make a
// change pass: a change that breaks it breaks existing controllers. Add a
// new fixture beside it for a new command or field instead.
var updateReplay = flag.Bool("update", false, "rewrite testdata/replay from replayCommands")

const replayDir = "testdata/replay"

// replayCommands covers every MessageType with realistic payloads, in an
// order in which each applies (one deliberately fails, as logs hold failed
// commands too).
func replayCommands() []replayCommand {
	return slices.Concat(replayControllerCommands(), replayModelCommands(), replayAgentCommands(), replayOperatorCommands(),
		replayJoinTokenCommands(), replayResourceCommands(), replayModelConstraintsCommands(), replayMachineTaskCommands(),
		replayMigrationCommands(), replayMigrationReapCommands(), replayMinionCommands())
}

// replayResourceCommands are appended after the join token commands: an
// application deployed with a file resource, storage and a charm origin,
// then new content for the resource, then the same content again (no new
// revision).
func replayResourceCommands() []replayCommand {
	const m = replayModel
	cfg := ResourceUpload{Name: "config", Type: "file", Path: "config.tar.gz", SHA256: sha("config-1"), Size: 4096}
	cfg2 := cfg
	cfg2.SHA256, cfg2.Size = sha("config-2"), 5120
	return []replayCommand{
		{AddApplicationType, &AddApplicationRequest{ModelUUID: m, Name: "files", CharmSHA256: sha("kv-r1"), NumUnits: 0,
			Base: "ubuntu@24.04", OriginBase: "ubuntu@24.04", Channel: "latest/edge", Storage: map[string]string{"data": "rootfs,1G,1"},
			Resources: []ResourceUpload{cfg}, Now: replayAt(19 * time.Minute)}},
		{AttachResourcesType, &AttachResourcesRequest{ModelUUID: m, App: "files", Resources: []ResourceUpload{cfg2}, Now: replayAt(20 * time.Minute)}},
		{AttachResourcesType, &AttachResourcesRequest{ModelUUID: m, App: "files", Resources: []ResourceUpload{cfg2}, Now: replayAt(21 * time.Minute)}},
	}
}

// replayModelConstraintsCommands are appended after the resource commands, so
// the earlier lines of the log stay as they were: the model's
// constraints, then a machine that takes them under its own.
func replayModelConstraintsCommands() []replayCommand {
	return []replayCommand{
		{SetModelConstraintsType, &SetModelConstraintsRequest{ModelUUID: replayModel, Constraints: "mem=2048M arch=amd64"}},
		{AddMachineType, &AddMachineRequest{ModelUUID: replayModel, Constraints: "mem=8192M"}},
	}
}

// replayMachineTaskCommands are appended after the model constraints
// commands, so the earlier lines of the log stay as they were: juju-exec
// on machine 6 (EnqueueTaskRequest.Machine), started and finished, then
// one on a machine that does not exist (refused).
func replayMachineTaskCommands() []replayCommand {
	const m = replayModel
	return []replayCommand{
		{EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: m, Machine: "6", Action: "juju-exec", Params: map[string]any{"command": "hostname"},
			Parallel: true, Now: replayAt(22 * time.Minute)}},
		{StartTaskType, &StartTaskRequest{ModelUUID: m, ID: "3", Now: replayAt(22 * time.Minute)}},
		{FinishTaskType, &FinishTaskRequest{ModelUUID: m, ID: "3", Status: api.TaskFailed, Message: "exit status 1",
			Results: map[string]any{"return-code": 1, "stderr": "no\n"}, Now: replayAt(23 * time.Minute)}},
		{EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: m, Machine: "60", Action: "juju-exec", Params: map[string]any{"command": "true"},
			Now: replayAt(24 * time.Minute)}},
	}
}

// replayJoinTokenCommands are appended after the commands the fixture was
// first written with, so that the earlier lines of the log stay as they
// were: two node join tokens, one used, one reused (refused).
func replayJoinTokenCommands() []replayCommand {
	return []replayCommand{
		{CreateJoinTokenType, &CreateJoinTokenRequest{Hash: sha("node-token-1"), Expires: replayAt(time.Hour), Now: replayAt(16 * time.Minute)}},
		{CreateJoinTokenType, &CreateJoinTokenRequest{Hash: sha("node-token-2"), Expires: replayAt(2 * time.Hour), Now: replayAt(16 * time.Minute)}},
		{UseJoinTokenType, &UseJoinTokenRequest{Hash: sha("node-token-1"), Node: "node-3f2a", Now: replayAt(17 * time.Minute)}},
		{UseJoinTokenType, &UseJoinTokenRequest{Hash: sha("node-token-1"), Node: "node-9c1d", Now: replayAt(18 * time.Minute)}},
	}
}

// The model the replay fixture deploys to, and the time its log starts.
const replayModel = "0b9a2f7e-4c1d-4e8a-9f3b-7d6c5e4a3b21"

var replayStart = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

func replayAt(d time.Duration) time.Time { return replayStart.Add(d) }

// replayControllerCommands sets up the controller, its users and models,
// and uploads charms.
func replayControllerCommands() []replayCommand {
	const m = replayModel
	t := replayStart
	kvMeta := "name: kv\nprovides:\n  db: {interface: kv}\npeers:\n  cluster: {interface: kv-peers}\n"
	kv := api.Charm{SHA256: sha("kv-r1"), Name: "kv", Size: 20480, MetadataYAML: kvMeta,
		ConfigYAML:  "options:\n  port: {type: int, default: 7000}\n  ratio: {type: float}\n",
		ActionsYAML: "backup:\n  params:\n    target: {type: string}\n",
		Endpoints: []api.Endpoint{
			{Name: "db", Role: api.RoleProvider, Interface: "kv", Scope: "global", Limit: 8},
			{Name: "cluster", Role: api.RolePeer, Interface: "kv-peers", Scope: "global"},
		}}
	kv2 := kv
	kv2.SHA256, kv2.Size = sha("kv-r2"), 20992
	web := api.Charm{SHA256: sha("web-r1"), Name: "web", Size: 10240, MetadataYAML: "name: web\n",
		Endpoints: []api.Endpoint{
			{Name: "db", Role: api.RoleRequirer, Interface: "kv", Scope: "global"},
			{Name: "cache", Role: api.RoleRequirer, Interface: "kv", Scope: "global", Optional: true},
			{Name: "website", Role: api.RoleProvider, Interface: "http", Scope: "global"},
		}}
	logger := api.Charm{SHA256: sha("logger-r1"), Name: "logger", Size: 4096, Subordinate: true, MetadataYAML: "name: logger\nsubordinate: true\n",
		Endpoints: []api.Endpoint{{Name: "host", Role: api.RoleRequirer, Interface: "juju-info", Scope: "container"}}}
	proxy := api.Charm{SHA256: sha("proxy-r1"), Name: "proxy", Size: 2048, MetadataYAML: "name: proxy\n",
		Endpoints: []api.Endpoint{{Name: "backend", Role: api.RoleRequirer, Interface: "http", Scope: "global"}}}
	return []replayCommand{
		{ControllerInitType, &ControllerInitRequest{UUID: "c7e1d2a0-5b8f-4f61-a3c9-2e4d6f8a0b1c", Name: "east", CACert: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}},
		{SetPlacementType, &SetPlacementRequest{Cloud: "lab", Region: "eu-west-1"}},
		{UpsertControllerNodeType, &UpsertControllerNodeRequest{Node: api.ControllerNode{ID: "n1", RaftAddr: "10.0.0.1:7001", APIAddr: "10.0.0.1:17070", Voter: true}}},
		{UpsertControllerNodeType, &UpsertControllerNodeRequest{Node: api.ControllerNode{ID: "n2", RaftAddr: "10.0.0.2:7001", APIAddr: "10.0.0.2:17070"}}},
		{RemoveControllerNodeType, &RemoveControllerNodeRequest{ID: "n2"}},
		{UpsertUserType, &UpsertUserRequest{User: api.User{Name: "admin", DisplayName: "Admin", Access: "superuser", CreatedAt: t}, PasswordHash: "$2a$10$adminhash"}},
		{UpsertUserType, &UpsertUserRequest{User: api.User{Name: "bob", Access: "login", CreatedAt: replayAt(time.Minute), Disabled: true}, PasswordHash: "$2a$10$bobhash"}},
		{SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "user-bob", Hash: "bob-secret-hash"}}},
		{RemoveUserType, &RemoveUserRequest{Name: "bob"}},
		{AddModelType, &AddModelRequest{UUID: m, Name: "prod", Owner: "admin", Now: t,
			Config: map[string]any{"default-base": "ubuntu@24.04", "logging-config": "<root>=INFO"}}},
		{AddModelType, &AddModelRequest{UUID: "5d2c1b0a-9e8f-4a7b-8c6d-1e2f3a4b5c6d", Name: "scratch", Owner: "admin", Now: replayAt(time.Second)}},
		{AddModelType, &AddModelRequest{UUID: "dup", Name: "prod", Owner: "admin", Now: replayAt(time.Second)}}, // fails: name taken
		{RemoveModelType, &RemoveModelRequest{ModelUUID: "5d2c1b0a-9e8f-4a7b-8c6d-1e2f3a4b5c6d"}},
		{AddModelType, &AddModelRequest{UUID: "staging-uuid", Name: "staging", Owner: "admin", Now: replayAt(time.Second)}},
		{AddMachineType, &AddMachineRequest{ModelUUID: "staging-uuid"}},
		{DestroyModelType, &DestroyModelRequest{ModelUUID: "staging-uuid", Now: replayAt(2 * time.Second)}},
		{SetModelConfigType, &SetModelConfigRequest{ModelUUID: m, Set: map[string]any{"update-status-hook-interval": "1m", "max-status-history": 50}, Unset: []string{"logging-config"}}},
		{AddCharmType, &AddCharmRequest{Charm: kv}},
		{AddCharmType, &AddCharmRequest{Charm: kv2}},
		{AddCharmType, &AddCharmRequest{Charm: web}},
		{AddCharmType, &AddCharmRequest{Charm: logger}},
		{AddCharmType, &AddCharmRequest{Charm: proxy}},
	}
}

// replayModelCommands deploys, scales, relates and tears down.
func replayModelCommands() []replayCommand {
	const m = replayModel
	return []replayCommand{
		{AddApplicationType, &AddApplicationRequest{ModelUUID: m, Name: "kv", CharmSHA256: sha("kv-r1"), NumUnits: 2, Base: "ubuntu@24.04",
			Config: map[string]any{"port": 7000, "ratio": 0.25}, Constraints: "mem=2G", Now: replayAt(time.Minute)}},
		{AddApplicationType, &AddApplicationRequest{ModelUUID: m, Name: "web", CharmSHA256: sha("web-r1"), NumUnits: 1, Placement: []string{"lxd:0"}, Trust: true, Now: replayAt(time.Minute)}},
		{AddApplicationType, &AddApplicationRequest{ModelUUID: m, Name: "logger", CharmSHA256: sha("logger-r1"), Now: replayAt(time.Minute)}},
		{AddApplicationType, &AddApplicationRequest{ModelUUID: m, Name: "proxy", CharmSHA256: sha("proxy-r1"), NumUnits: 1, Now: replayAt(time.Minute)}},
		{SetApplicationConfigType, &SetApplicationConfigRequest{ModelUUID: m, App: "kv",
			Set: map[string]any{"port": 7001, "nested": map[string]any{"a": []any{1, "x", true}}}, Unset: []string{"ratio"}}},
		{SetCharmType, &SetCharmRequest{ModelUUID: m, App: "kv", CharmSHA256: sha("kv-r2"), ForceUnits: true, Set: map[string]any{"ratio": 0.5}, Unset: []string{"nested"}}},
		{SetExposedType, &SetExposedRequest{ModelUUID: m, App: "web", Exposed: true}},
		{SetConstraintsType, &SetConstraintsRequest{ModelUUID: m, App: "kv", Constraints: "mem=4G cores=2"}},
		{SetTrustType, &SetTrustRequest{ModelUUID: m, App: "kv", Trust: true}},
		{AddUnitsType, &AddUnitsRequest{ModelUUID: m, App: "kv", N: 1, Placement: []string{"1"}, Now: replayAt(2 * time.Minute)}},
		{ScaleApplicationType, &ScaleApplicationRequest{ModelUUID: m, App: "kv", Scale: 4, Now: replayAt(3 * time.Minute)}},
		{DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: m, Units: []string{"kv/3"}}},
		{EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: m, Unit: "kv/3"}},
		{RemoveUnitType, &RemoveUnitRequest{ModelUUID: m, Unit: "kv/3"}},
		{DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: m, App: "proxy", Force: true}},
		{AddRelationType, &AddRelationRequest{ModelUUID: m, Endpoints: [2]string{"web:db", "kv"}, Now: replayAt(4 * time.Minute)}},
		{AddRelationType, &AddRelationRequest{ModelUUID: m, Endpoints: [2]string{"web:cache", "kv:db"}, Now: replayAt(4 * time.Minute)}},
		{AddRelationType, &AddRelationRequest{ModelUUID: m, Endpoints: [2]string{"logger", "web"}, Now: replayAt(4 * time.Minute)}},
		{DestroyRelationType, &DestroyRelationRequest{ModelUUID: m, Endpoints: [2]string{"web:cache", "kv:db"}}},
	}
}

// replayAgentCommands is what unit agents propose: scopes, leadership,
// relation data and hook commits.
func replayAgentCommands() []replayCommand {
	const m = replayModel
	return []replayCommand{
		{EnterScopeType, &EnterScopeRequest{ModelUUID: m, RelationID: 1, Unit: "kv/0", Settings: map[string]string{"ingress-address": "10.1.0.10"}}},
		{EnterScopeType, &EnterScopeRequest{ModelUUID: m, RelationID: 1, Unit: "web/0", Settings: map[string]string{"ingress-address": "10.1.0.20"}}},
		{LeaveScopeType, &LeaveScopeRequest{ModelUUID: m, RelationID: 1, Unit: "web/0"}},
		{ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: m, App: "kv", Unit: "kv/0", Now: replayAt(5 * time.Minute), Duration: time.Minute}},
		{ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: m, App: "web", Unit: "web/0", Now: replayAt(5 * time.Minute), Duration: 30 * time.Second}},
		{RevokeLeaseType, &RevokeLeaseRequest{ModelUUID: m, App: "web", Holder: "web/0"}},
		{SetRelationDataType, &SetRelationDataRequest{ModelUUID: m, RelationID: 1, Unit: "kv/0", App: true,
			Set: map[string]string{"password": "s3cret", "port": "7001"}, Now: replayAt(5*time.Minute + time.Second)}},
		{SetRelationDataType, &SetRelationDataRequest{ModelUUID: m, RelationID: 1, Unit: "kv/0",
			Set: map[string]string{"hostname": "kv-0"}, Unset: []string{"ingress-address"}, Now: replayAt(5*time.Minute + time.Second)}},
		{CommitHookChangesType, &CommitHookChangesRequest{ModelUUID: m, Now: replayAt(5*time.Minute + 2*time.Second), Changes: api.AgentHookChanges{
			Unit:       "kv/0",
			Relations:  []api.SettingsChange{{RelationID: 1, Set: map[string]string{"ready": "true"}}, {RelationID: 1, App: true, Unset: []string{"port"}}},
			OpenPorts:  []api.Port{{Protocol: "tcp", From: 7001, To: 7001, Endpoints: []string{"db"}}, {Protocol: "icmp"}},
			ClosePorts: []api.Port{{Protocol: "udp", From: 5000, To: 5010}},
			StateSet:   map[string]string{"initialised": "yes"}, StateUnset: []string{"stale"},
			LeaderSettings: &api.SettingsChange{Set: map[string]string{"cluster-id": "abc"}}}}},
		{ExpireLeasesType, &ExpireLeasesRequest{Now: replayAt(7 * time.Minute)}},
		{ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: m, App: "kv", Unit: "kv/1", Now: replayAt(8 * time.Minute), Duration: time.Minute}},
	}
}

// replayOperatorCommands runs actions, sets status, manages machines,
// credentials and the hub trust.
func replayOperatorCommands() []replayCommand {
	const m = replayModel
	return []replayCommand{
		{EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: m, Receiver: "kv/0", Action: "backup", Params: map[string]any{"target": "s3://b", "keep": 3}, Now: replayAt(9 * time.Minute)}},
		{EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: m, Receiver: "kv/1", Action: "backup", Parallel: true, ExecutionGroup: "nightly", Now: replayAt(9 * time.Minute)}},
		{EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: m, Receiver: "web/0", Action: "juju-exec", Params: map[string]any{"command": "hostname", "timeout": 1.5e9}, Now: replayAt(9 * time.Minute)}},
		{StartTaskType, &StartTaskRequest{ModelUUID: m, ID: "0", Now: replayAt(10 * time.Minute)}},
		{AppendTaskLogType, &AppendTaskLogRequest{ModelUUID: m, ID: "0", Time: replayAt(10*time.Minute + time.Second), Message: "uploading"}},
		{FinishTaskType, &FinishTaskRequest{ModelUUID: m, ID: "0", Status: api.TaskCompleted, Message: "done",
			Results: map[string]any{"size": 12345, "where": map[string]any{"url": "s3://b/0"}}, Now: replayAt(11 * time.Minute)}},
		{CancelTaskType, &CancelTaskRequest{ModelUUID: m, ID: "1", Now: replayAt(11 * time.Minute)}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindWorkload, Entity: "kv/0",
			Status: api.Status{Status: "active", Message: "ready", Data: map[string]any{"connections": 4}, Since: replayAt(12 * time.Minute)}}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindAgent, Entity: "kv/0",
			Status: api.Status{Status: "idle", Since: replayAt(12 * time.Minute)}}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindApplication, Entity: "kv", Leader: "kv/1", Now: replayAt(8*time.Minute + 30*time.Second),
			Status: api.Status{Status: "active", Message: "3 units", Since: replayAt(8*time.Minute + 30*time.Second)}}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindMachine, Entity: "0",
			Status: api.Status{Status: "started", Since: replayAt(12 * time.Minute)}}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindModel, Entity: m,
			Status: api.Status{Status: "available", Since: replayAt(12 * time.Minute)}}},
		{SetUnitPortsType, &SetUnitPortsRequest{ModelUUID: m, Unit: "web/0", Open: []api.Port{{Protocol: "tcp", From: 80, To: 80}, {Protocol: "tcp", From: 443, To: 443}},
			Close: []api.Port{{Protocol: "tcp", From: 8080, To: 8080}}}},
		{SetWorkloadVersionType, &SetWorkloadVersionRequest{ModelUUID: m, Unit: "kv/0", Version: "7.2.4"}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindAgent, Entity: "kv/1",
			Status: api.Status{Status: "error", Message: "hook failed: \"config-changed\"", Data: map[string]any{"hook": "config-changed"}, Since: replayAt(12 * time.Minute)}}},
		{SetStatusType, &SetStatusRequest{ModelUUID: m, Kind: api.StatusKindAgent, Entity: "kv/2",
			Status: api.Status{Status: "error", Message: "hook failed: \"install\"", Since: replayAt(12 * time.Minute)}}},
		{SetResolvedType, &SetResolvedRequest{ModelUUID: m, Unit: "kv/1", Mode: "retry"}},
		{ClearResolvedType, &ClearResolvedRequest{ModelUUID: m, Unit: "kv/1"}},
		{SetResolvedType, &SetResolvedRequest{ModelUUID: m, Unit: "kv/2", Mode: "no-retry"}},
		{AddMachineType, &AddMachineRequest{ModelUUID: m, Base: "ubuntu@22.04", Constraints: "mem=8G"}},
		{AddMachineType, &AddMachineRequest{ModelUUID: m}},
		{SetMachineProvisionedType, &SetMachineProvisionedRequest{ModelUUID: m, ID: "0", ProviderID: "i-0a1b2c", Addresses: []string{"10.1.0.10", "fd00::10"}, Base: "ubuntu@24.04"}},
		{DestroyMachineType, &DestroyMachineRequest{ModelUUID: m, ID: "5"}},
		{RemoveMachineType, &RemoveMachineRequest{ModelUUID: m, ID: "5"}},
		{CreateHubTokenType, &CreateHubTokenRequest{Hash: sha("join-token-1"), Expires: replayAt(time.Hour), Now: replayAt(13 * time.Minute)}},
		{CreateHubTokenType, &CreateHubTokenRequest{Hash: sha("join-token-2"), Expires: replayAt(2 * time.Hour), Now: replayAt(13 * time.Minute)}},
		{SetHubTrustType, &SetHubTrustRequest{Trust: api.HubTrust{URL: "https://hub.example.com", JWKSURL: "https://hub.example.com/.well-known/jwks.json",
			CACert: "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n", Source: api.HubTrustFromToken}, TokenHash: sha("join-token-1"), Now: replayAt(14 * time.Minute)}},
		{RemoveHubTrustType, &RemoveHubTrustRequest{}},
		{SetHubTrustType, &SetHubTrustRequest{Trust: api.HubTrust{URL: "https://hub2.example.com", Source: api.HubTrustFromFlags},
			FlagsNode: "n1", FlagsDigest: sha("flags"), Now: replayAt(15 * time.Minute)}},
		{SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "unit-kv-0", ModelUUID: m, Hash: "kv0-hash"}}},
		{SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "unit-kv-1", ModelUUID: m, Hash: "kv1-hash"}}},
		{RemoveCredentialType, &RemoveCredentialRequest{Tag: "unit-kv-1"}},
	}
}

type replayCommand struct {
	typ MessageType
	req any
}

// replayResult is what one command of the log returned.
type replayResult struct {
	Index uint64 `json:"index"`
	Type  string `json:"type"`
	Err   string `json:"err,omitempty"`
	Value any    `json:"value,omitempty"`
}

// The log file holds one command per line: the MessageType number, a
// space, and the command's JSON body as Encode wrote it (Encode ends the
// body with a newline and JSON escapes newlines inside it).
func writeReplayLog(t *testing.T, cmds [][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, c := range cmds {
		fmt.Fprintf(&b, "%d ", c[0])
		b.Write(c[1:])
	}
	return b.Bytes()
}

func readReplayLog(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var cmds [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		num, body, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(num, 10, 8)
		if !ok || err != nil {
			t.Fatalf("log line %d: %q", len(cmds)+1, sc.Text())
		}
		cmds = append(cmds, append(append([]byte{byte(n)}, body...), '\n'))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// replay applies cmds to a fresh FSM at indexes 1..n, as raft would.
func replay(t *testing.T, cmds [][]byte) (*FSM, []replayResult) {
	t.Helper()
	h := newHarness(t)
	var out []replayResult
	for i, c := range cmds {
		idx := uint64(i + 1)
		res := h.fsm.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: c}).(ApplyResult)
		r := replayResult{Index: idx, Type: MessageType(c[0]).String(), Value: canonical(reflect.ValueOf(res.Value))}
		if res.Err != nil {
			r.Err = res.Err.Error()
		}
		out = append(out, r)
	}
	return h.fsm, out
}

// dumpStore is a canonical dump of every snapshotted table, made by
// reflection over the stored Go values (field names, not JSON tags), so it
// checks the store's contents independently of any encoding.
func dumpStore(t *testing.T, s *Store) []byte {
	t.Helper()
	snap := s.Snapshot()
	dump := map[string][]any{}
	for _, name := range tables.All {
		it, err := snap.txn.Get(name, "id")
		if err != nil {
			t.Fatal(err)
		}
		rows := []any{}
		for obj := it.Next(); obj != nil; obj = it.Next() {
			rows = append(rows, canonical(reflect.ValueOf(obj)))
		}
		dump[name] = rows
	}
	return mustIndent(t, dump)
}

func mustIndent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

var timeType = reflect.TypeFor[time.Time]()

// canonical turns a Go value into plain maps, slices and scalars, keeping
// apart what JSON would merge: nil from empty, and a number's Go type.
func canonical(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return canonical(v.Elem())
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).Format(time.RFC3339Nano)
		}
		out := map[string]any{}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				out[f.Name] = canonical(v.Field(i))
			}
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[fmt.Sprint(k.Interface())] = canonical(v.MapIndex(k))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = canonical(v.Index(i))
		}
		return out
	case reflect.String:
		if v.Type() != reflect.TypeFor[string]() {
			return fmt.Sprintf("%s(%s)", v.Type(), v.String())
		}
		return v.String()
	default:
		if v.Kind() == reflect.Bool {
			return v.Bool()
		}
		return fmt.Sprintf("%s(%v)", v.Type(), v.Interface())
	}
}

func readReplayFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(replayDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplayGolden replays the fixture log and restores the fixture
// snapshot: both must give the recorded store, and re-encoding the decoded
// commands and re-writing the snapshot must give the recorded bytes.
func TestReplayGolden(t *testing.T) {
	if *updateReplay {
		writeReplayFixture(t)
	}
	cmds := readReplayLog(t, readReplayFile(t, "commands.log"))
	wantStore := readReplayFile(t, "store.json")
	wantSnap := readReplayFile(t, "snapshot.bin")

	t.Run("every type", func(t *testing.T) {
		seen := map[MessageType]bool{}
		for _, c := range cmds {
			seen[MessageType(c[0])] = true
		}
		for _, typ := range registeredTypes() {
			if !seen[typ] {
				t.Errorf("the fixture log has no %v command", typ)
			}
		}
	})
	t.Run("re-encode", func(t *testing.T) {
		for i, c := range cmds {
			typ, req, err := Decode(c)
			if err != nil {
				t.Fatalf("command %d: %v", i+1, err)
			}
			got, err := Encode(typ, req)
			if err != nil {
				t.Fatalf("command %d: %v", i+1, err)
			}
			if !bytes.Equal(got, c) {
				t.Errorf("command %d (%v) re-encodes differently:\n got %q\nwant %q", i+1, typ, got, c)
			}
		}
	})
	t.Run("log", func(t *testing.T) {
		f, results := replay(t, cmds)
		compareGolden(t, "results.json", mustIndent(t, results), readReplayFile(t, "results.json"))
		compareGolden(t, "store.json", dumpStore(t, f.Store()), wantStore)
		if got := snapshotBytes(t, f.Store()); !bytes.Equal(got, wantSnap) {
			t.Errorf("the replayed store writes a snapshot that differs from snapshot.bin (%d bytes, want %d)", len(got), len(wantSnap))
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		h := newHarness(t)
		if err := h.fsm.Restore(io.NopCloser(bytes.NewReader(wantSnap))); err != nil {
			t.Fatal(err)
		}
		compareGolden(t, "store.json", dumpStore(t, h.fsm.Store()), wantStore)
		if got := snapshotBytes(t, h.fsm.Store()); !bytes.Equal(got, wantSnap) {
			t.Errorf("the restored store re-writes a snapshot that differs from snapshot.bin (%d bytes, want %d)", len(got), len(wantSnap))
		}
	})
}

func compareGolden(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Errorf("%s differs at line %d:\n got %s\nwant %s", name, i+1, gl[i], wl[i])
			return
		}
	}
	t.Errorf("%s differs in length: %d lines, want %d", name, len(gl), len(wl))
}

// writeReplayFixture regenerates testdata/replay (go test -run
// TestReplayGolden -update). See updateReplay before using it.
func writeReplayFixture(t *testing.T) {
	t.Helper()
	var cmds [][]byte
	for _, c := range replayCommands() {
		b, err := Encode(c.typ, c.req)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, b)
	}
	f, results := replay(t, cmds)
	for _, r := range results {
		if r.Err != "" && r.Type != AddModelType.String() && r.Type != UseJoinTokenType.String() && r.Type != EnqueueTaskType.String() {
			t.Fatalf("fixture command %d (%s) failed: %s", r.Index, r.Type, r.Err)
		}
	}
	files := map[string][]byte{
		"commands.log": writeReplayLog(t, cmds),
		"results.json": mustIndent(t, results),
		"store.json":   dumpStore(t, f.Store()),
		"snapshot.bin": snapshotBytes(t, f.Store()),
	}
	if err := os.MkdirAll(replayDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(replayDir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
