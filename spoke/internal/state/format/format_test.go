package format

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/droverhq/drover/api"
)

// fieldNames lists a struct's exported field names (embedded structs by
// their type name, as they are declared).
func fieldNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.IsExported() {
			out = append(out, f.Name)
		}
	}
	return out
}

// TestFieldsCovered fails when an api struct the store keeps gains a field
// its format type lacks (the converter would drop it from snapshots and
// commands), or the format type has a field no api field fills.
func TestFieldsCovered(t *testing.T) {
	pairs := []struct {
		api, format reflect.Type
		notStored   []string // api fields deliberately left out, and why
	}{
		{reflect.TypeFor[api.Meta](), reflect.TypeFor[Meta](), nil},
		{reflect.TypeFor[api.Status](), reflect.TypeFor[Status](), nil},
		{reflect.TypeFor[api.Controller](), reflect.TypeFor[Controller](), nil},
		{reflect.TypeFor[api.ControllerNode](), reflect.TypeFor[ControllerNode](), nil},
		// The hash travels beside the user: UserRecord, UpsertUserRequest.
		{reflect.TypeFor[api.User](), reflect.TypeFor[User](), []string{"PasswordHash"}},
		{reflect.TypeFor[api.Credential](), reflect.TypeFor[Credential](), nil},
		// Index is a hub's listing of the model, never stored.
		{reflect.TypeFor[api.Model](), reflect.TypeFor[Model](), []string{"Index"}},
		{reflect.TypeFor[api.Endpoint](), reflect.TypeFor[Endpoint](), nil},
		{reflect.TypeFor[api.Charm](), reflect.TypeFor[Charm](), nil},
		{reflect.TypeFor[api.Application](), reflect.TypeFor[Application](), nil},
		{reflect.TypeFor[api.Port](), reflect.TypeFor[Port](), nil},
		{reflect.TypeFor[api.Unit](), reflect.TypeFor[Unit](), nil},
		{reflect.TypeFor[api.Machine](), reflect.TypeFor[Machine](), nil},
		{reflect.TypeFor[api.RelationEndpoint](), reflect.TypeFor[RelationEndpoint](), nil},
		{reflect.TypeFor[api.Relation](), reflect.TypeFor[Relation](), nil},
		{reflect.TypeFor[api.RelationScope](), reflect.TypeFor[RelationScope](), nil},
		{reflect.TypeFor[api.RelationData](), reflect.TypeFor[RelationData](), nil},
		{reflect.TypeFor[api.Lease](), reflect.TypeFor[Lease](), nil},
		{reflect.TypeFor[api.TaskLog](), reflect.TypeFor[TaskLog](), nil},
		{reflect.TypeFor[api.Task](), reflect.TypeFor[Task](), nil},
		{reflect.TypeFor[api.StatusHistoryEntry](), reflect.TypeFor[StatusHistoryEntry](), nil},
		{reflect.TypeFor[api.HubTrust](), reflect.TypeFor[HubTrust](), nil},
		{reflect.TypeFor[api.SettingsChange](), reflect.TypeFor[SettingsChange](), nil},
		{reflect.TypeFor[api.AgentHookChanges](), reflect.TypeFor[HookChanges](), nil},
	}
	for _, p := range pairs {
		have := fieldNames(p.format)
		for _, f := range fieldNames(p.api) {
			if !slices.Contains(have, f) && !slices.Contains(p.notStored, f) {
				t.Errorf("%v.%s has no field in format.%s: add it there and to its converters", p.api, f, p.format.Name())
			}
		}
		apiFields := fieldNames(p.api)
		for _, f := range have {
			if !slices.Contains(apiFields, f) {
				t.Errorf("format.%s.%s has no field in %v", p.format.Name(), f, p.api)
			}
		}
	}
}

// TestTypesDoNotUseAPI: only the converters import the api package, so no
// format type can hold an api struct.
func TestTypesDoNotUseAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/droverhq/drover/api" && name != "convert.go" && name != "format_test.go" {
				t.Errorf("%s imports the api package: only convert.go may", name)
			}
		}
	}
}

// TestConvertersKeepEveryField round-trips a fully populated api value of
// each stored kind through its format type.
func TestConvertersKeepEveryField(t *testing.T) {
	st := api.Status{Status: "active", Message: "m", Data: map[string]any{"k": "v"}}
	meta := api.Meta{CreateIndex: 1, ModifyIndex: 2}
	ep := api.Endpoint{Name: "db", Role: api.RoleProvider, Interface: "kv", Scope: "global", Limit: 1, Optional: true}
	port := api.Port{Protocol: "tcp", From: 1, To: 2, Endpoints: []string{"db"}}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	c := &api.Controller{UUID: "u", Name: "n", CACert: "c", Cloud: "cl", Region: "r", Meta: meta}
	check("controller", FromController(c).API(), c)
	n := &api.ControllerNode{ID: "n", RaftAddr: "r", APIAddr: "a", Voter: true, Meta: meta}
	check("node", FromControllerNode(n).API(), n)
	u := &api.User{Name: "n", DisplayName: "d", Access: "a", PasswordHash: "h", Disabled: true, Meta: meta}
	r := FromUserRecord(u)
	check("user", r.User.API(r.PasswordHash), u)
	cr := &api.Credential{Tag: "t", ModelUUID: "m", Hash: "h", Meta: meta}
	check("credential", FromCredential(cr).API(), cr)
	m := &api.Model{UUID: "u", Name: "n", Owner: "o", Life: api.Dying, Config: map[string]any{"a": 1}, Status: st,
		NextMachine: 1, NextRelation: 2, NextTask: 3, Meta: meta}
	check("model", FromModel(m).API(), m)
	ch := &api.Charm{SHA256: "s", Name: "n", Size: 1, Subordinate: true, Endpoints: []api.Endpoint{ep},
		MetadataYAML: "m", ConfigYAML: "c", ActionsYAML: "a", Meta: meta}
	check("charm", FromCharm(ch).API(), ch)
	a := &api.Application{ModelUUID: "m", Name: "n", CharmSHA256: "s", CharmName: "c", CharmRevision: 1,
		ForceCharmUpgrade: true, Subordinate: true, Endpoints: []api.Endpoint{}, Config: map[string]any{},
		Constraints: "c", Exposed: true, Trust: true, Scale: 1, Life: api.Alive, Status: st, WorkloadVersion: "w", NextUnit: 1, Meta: meta}
	check("application", FromApplication(a).API(), a)
	un := &api.Unit{ModelUUID: "m", Name: "n", Application: "a", MachineID: "0", Principal: "p", Life: api.Dead,
		WorkloadStatus: st, AgentStatus: st, WorkloadVersion: "w", OpenPorts: []api.Port{port}, Resolved: "retry", RetryVersion: 1, Meta: meta}
	check("unit", FromUnit(un).API(), un)
	mc := &api.Machine{ModelUUID: "m", ID: "0", ProviderID: "p", Addresses: []string{"a"}, Base: "b", Constraints: "c",
		Life: api.Alive, AgentStatus: st, InstanceStatus: st, Meta: meta}
	check("machine", FromMachine(mc).API(), mc)
	rel := &api.Relation{ModelUUID: "m", ID: 1, Key: "k", Endpoints: []api.RelationEndpoint{{Application: "a", Endpoint: ep}}, Life: api.Alive, Meta: meta}
	check("relation", FromRelation(rel).API(), rel)
	sc := &api.RelationScope{ModelUUID: "m", RelationID: 1, Unit: "u", Meta: meta}
	check("scope", FromRelationScope(sc).API(), sc)
	d := &api.RelationData{ModelUUID: "m", RelationID: 1, Owner: "o", App: true, Settings: map[string]string{"a": "b"}, Version: 1, Meta: meta}
	check("relation data", FromRelationData(d).API(), d)
	l := &api.Lease{ModelUUID: "m", Application: "a", Holder: "h", Term: 1, Meta: meta}
	check("lease", FromLease(l).API(), l)
	tk := &api.Task{ModelUUID: "m", ID: "1", Receiver: "r", Action: "a", Params: map[string]any{}, Parallel: true,
		ExecutionGroup: "g", Status: "s", Message: "m", Results: map[string]any{"a": 1}, Log: []api.TaskLog{{Message: "x"}}, Meta: meta}
	check("task", FromTask(tk).API(), tk)
	h := &api.StatusHistoryEntry{ModelUUID: "m", Entity: "e", Kind: "k", Seq: 1, Status: st}
	check("status history", FromStatusHistoryEntry(h).API(), h)
	ht := &api.HubTrust{URL: "u", JWKSURL: "j", CACert: "c", Source: "s"}
	check("hub trust", FromHubTrust(ht).API(), ht)
	hc := api.AgentHookChanges{Unit: "u", Relations: []api.SettingsChange{{RelationID: 1, App: true, Set: map[string]string{"a": "b"}, Unset: []string{"c"}}},
		OpenPorts: []api.Port{port}, ClosePorts: []api.Port{}, StateSet: map[string]string{"a": "b"}, StateUnset: []string{"x"},
		LeaderSettings: &api.SettingsChange{Set: map[string]string{"l": "v"}}}
	check("hook changes", FromHookChanges(hc).API(), hc)
}
