package state

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestMessageTypesArePinned fails when a command is renumbered: the numbers
// are in raft logs and must never move.
func TestMessageTypesArePinned(t *testing.T) {
	pinned := map[string]MessageType{
		"ControllerInit": 1, "UpsertControllerNode": 2, "RemoveControllerNode": 3,
		"UpsertUser": 4, "RemoveUser": 5, "SetCredential": 6, "RemoveCredential": 7,
		"AddModel": 8, "SetModelConfig": 9, "DestroyModel": 10, "RemoveModel": 11,
		"AddCharm": 12, "AddApplication": 13, "SetApplicationConfig": 14, "SetCharm": 15,
		"SetExposed": 16, "SetConstraints": 17, "AddUnits": 18, "ScaleApplication": 19,
		"DestroyUnits": 20, "EnsureUnitDead": 21, "RemoveUnit": 22, "DestroyApplication": 23,
		"AddRelation": 24, "DestroyRelation": 25, "EnterScope": 26, "LeaveScope": 27,
		"SetRelationData": 28, "ClaimLease": 29, "RevokeLease": 30, "ExpireLeases": 31,
		"EnqueueTask": 32, "StartTask": 33, "AppendTaskLog": 34, "FinishTask": 35,
		"CancelTask": 36, "SetStatus": 37, "SetUnitPorts": 38, "SetWorkloadVersion": 39,
		"SetResolved": 40, "ClearResolved": 41, "AddMachine": 42, "SetMachineProvisioned": 43,
		"DestroyMachine": 44, "RemoveMachine": 45, "CommitHookChanges": 46,
		"CreateHubToken": 47, "SetHubTrust": 48, "RemoveHubTrust": 49, "SetPlacement": 50, "SetTrust": 51,
		"CreateJoinToken": 52, "UseJoinToken": 53, "SetModelConstraints": 54, "AttachResources": 55,
		"QuiesceModel": 56, "ReleaseModel": 57, "ImportModel": 58, "ActivateModel": 59, "AbortImport": 60,
		"SetMigrationPhase": 61, "ReportMinion": 62, "ReapModel": 63,
	}
	if n := len(registeredTypes()); len(pinned) != n {
		t.Fatalf("%d pinned, %d registered: pin the new type here", len(pinned), n)
	}
	for name, n := range pinned {
		if got := n.String(); got != name {
			t.Errorf("MessageType %d is %q, want %q", n, got, name)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, typ := range registeredTypes() {
		proto := reflect.New(commands[typ].request).Elem().Interface()
		buf, err := Encode(typ, proto)
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		gotT, got, err := Decode(buf)
		if err != nil || gotT != typ {
			t.Fatalf("%v: decode %v %v", typ, gotT, err)
		}
		if reflect.TypeOf(got).Elem() != reflect.TypeOf(proto) {
			t.Fatalf("%v: decoded %T", typ, got)
		}
	}
	req := &AddApplicationRequest{ModelUUID: "m", Name: "kv", NumUnits: 2, Now: now,
		Placement: []string{"0", "lxd:0"}}
	buf, err := Encode(AddApplicationType, req)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("got %+v, want %+v", got, req)
	}
}

// registeredTypes lists the MessageTypes of the command table.
func registeredTypes() []MessageType {
	var out []MessageType
	for n, c := range commands {
		if c != nil {
			out = append(out, MessageType(n))
		}
	}
	return out
}

// TestCommandTable checks that the numbers 1 to 63 have exactly one
// entry each (commandTable refuses a second one) and that any other
// number is refused by Encode and Decode.
func TestCommandTable(t *testing.T) {
	const last = ReapModelType
	for n := range len(commands) {
		typ, c := MessageType(n), commands[n]
		if known := n >= 1 && typ <= last; known != (c != nil) {
			t.Errorf("MessageType %d: has entry %v, want %v", n, c != nil, known)
			continue
		}
		if c == nil {
			if _, err := Encode(typ, &AddModelRequest{}); !errors.Is(err, ErrUnknownMessageType) {
				t.Errorf("Encode of unknown type %d: %v", n, err)
			}
			if _, _, err := Decode([]byte{byte(n), '{', '}', '\n'}); !errors.Is(err, ErrUnknownMessageType) {
				t.Errorf("Decode of unknown type %d: %v", n, err)
			}
			continue
		}
		if c.typ != typ {
			t.Errorf("entry %d declares MessageType %d", n, c.typ)
		}
		if c.request.Kind() != reflect.Struct || c.request.Name() != c.name+"Request" {
			t.Errorf("MessageType %d: request %v, name %q", n, c.request, c.name)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a second entry for one MessageType was accepted")
		}
	}()
	commandTable(command(AddModelType, addModel), command(AddModelType, addModel))
}

func TestCodecErrors(t *testing.T) {
	if _, err := Encode(AddModelType, &AddCharmRequest{}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("mismatched request: %v", err)
	}
	if _, err := Encode(200, &AddCharmRequest{}); !errors.Is(err, ErrUnknownMessageType) {
		t.Errorf("unknown type encode: %v", err)
	}
	typ, _, err := Decode([]byte{200, '{', '}'})
	if typ != 200 || !errors.Is(err, ErrUnknownMessageType) || !errors.Is(err, api.ErrInvalid) {
		t.Errorf("unknown type decode: %v %v", typ, err)
	}
	if _, _, err := Decode(nil); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("empty: %v", err)
	}
	if _, _, err := Decode([]byte{byte(AddModelType), '{'}); err == nil {
		t.Error("truncated body decoded")
	}
}
