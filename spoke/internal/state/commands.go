package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/droverhq/drover/api"
)

// MessageType numbers a raft command. The numbers are written into the raft
// log and into nothing else, so they are permanent:
//
//	NEVER renumber, reorder or reuse a MessageType. Only append new ones.
//	A retired command keeps its number (and its request struct) forever,
//	because old logs replay it.
//
// 0 is reserved as invalid so that a zeroed buffer never decodes, and 255
// is the cluster layer's group-commit marker (cluster.BatchMarker): the
// cluster unwraps batch entries before the FSM sees them.
type MessageType uint8

// Raft command types. Explicit numbers, not iota, so that inserting a line
// cannot shift the values. Each has one entry in the commands table.
const (
	ControllerInitType        MessageType = 1
	UpsertControllerNodeType  MessageType = 2
	RemoveControllerNodeType  MessageType = 3
	UpsertUserType            MessageType = 4
	RemoveUserType            MessageType = 5
	SetCredentialType         MessageType = 6
	RemoveCredentialType      MessageType = 7
	AddModelType              MessageType = 8
	SetModelConfigType        MessageType = 9
	DestroyModelType          MessageType = 10
	RemoveModelType           MessageType = 11
	AddCharmType              MessageType = 12
	AddApplicationType        MessageType = 13
	SetApplicationConfigType  MessageType = 14
	SetCharmType              MessageType = 15
	SetExposedType            MessageType = 16
	SetConstraintsType        MessageType = 17
	AddUnitsType              MessageType = 18
	ScaleApplicationType      MessageType = 19
	DestroyUnitsType          MessageType = 20
	EnsureUnitDeadType        MessageType = 21
	RemoveUnitType            MessageType = 22
	DestroyApplicationType    MessageType = 23
	AddRelationType           MessageType = 24
	DestroyRelationType       MessageType = 25
	EnterScopeType            MessageType = 26
	LeaveScopeType            MessageType = 27
	SetRelationDataType       MessageType = 28
	ClaimLeaseType            MessageType = 29
	RevokeLeaseType           MessageType = 30
	ExpireLeasesType          MessageType = 31
	EnqueueTaskType           MessageType = 32
	StartTaskType             MessageType = 33
	AppendTaskLogType         MessageType = 34
	FinishTaskType            MessageType = 35
	CancelTaskType            MessageType = 36
	SetStatusType             MessageType = 37
	SetUnitPortsType          MessageType = 38
	SetWorkloadVersionType    MessageType = 39
	SetResolvedType           MessageType = 40
	ClearResolvedType         MessageType = 41
	AddMachineType            MessageType = 42
	SetMachineProvisionedType MessageType = 43
	DestroyMachineType        MessageType = 44
	RemoveMachineType         MessageType = 45
	CommitHookChangesType     MessageType = 46
	CreateHubTokenType        MessageType = 47
	SetHubTrustType           MessageType = 48
	RemoveHubTrustType        MessageType = 49
	SetPlacementType          MessageType = 50
	SetTrustType              MessageType = 51
	CreateJoinTokenType       MessageType = 52
	UseJoinTokenType          MessageType = 53
	SetModelConstraintsType   MessageType = 54
	AttachResourcesType       MessageType = 55
	QuiesceModelType          MessageType = 56
	ReleaseModelType          MessageType = 57
	ImportModelType           MessageType = 58
	ActivateModelType         MessageType = 59
	AbortImportType           MessageType = 60
	SetMigrationPhaseType     MessageType = 61
	ReapModelType             MessageType = 63
	ReportMinionType          MessageType = 62
	// Append new types here, with the next free number.
)

// commands is the one table of raft commands: per MessageType, the
// function that applies it to a write transaction, whose argument is the
// command's request struct, and for a request that carries api structs the
// converters to and from the format struct its JSON is. The apply
// functions live with their area (models.go, units.go, ...), named after
// the command. Encode, Decode and Apply read only this table;
// TestCommandTable checks that every MessageType has one entry.
var commands = commandTable(
	command(ControllerInitType, controllerInit),
	commandVia(UpsertControllerNodeType, upsertControllerNode, (*UpsertControllerNodeRequest).wire, upsertControllerNodeRequest),
	command(RemoveControllerNodeType, noValue(removeControllerNode)),
	commandVia(UpsertUserType, upsertUser, (*UpsertUserRequest).wire, upsertUserRequest),
	command(RemoveUserType, noValue(removeUser)),
	commandVia(SetCredentialType, setCredential, (*SetCredentialRequest).wire, setCredentialRequest),
	command(RemoveCredentialType, noValue(removeCredential)),
	command(AddModelType, addModel),
	command(SetModelConfigType, setModelConfig),
	command(DestroyModelType, destroyModel),
	command(RemoveModelType, noValue(removeModel)),
	commandVia(AddCharmType, addCharm, (*AddCharmRequest).wire, addCharmRequest),
	command(AddApplicationType, addApplication),
	command(SetApplicationConfigType, setApplicationConfig),
	command(SetCharmType, setCharm),
	command(SetExposedType, setExposed),
	command(SetConstraintsType, setConstraints),
	command(AddUnitsType, addUnits),
	command(ScaleApplicationType, scaleApplication),
	command(DestroyUnitsType, noValue(destroyUnits)),
	command(EnsureUnitDeadType, noValue(ensureUnitDead)),
	command(RemoveUnitType, noValue(removeUnit)),
	command(DestroyApplicationType, noValue(destroyApplication)),
	command(AddRelationType, addRelation),
	command(DestroyRelationType, noValue(destroyRelation)),
	command(EnterScopeType, noValue(enterScope)),
	command(LeaveScopeType, noValue(leaveScope)),
	command(SetRelationDataType, setRelationData),
	command(ClaimLeaseType, claimLease),
	command(RevokeLeaseType, noValue(revokeLease)),
	command(ExpireLeasesType, expireLeases),
	command(EnqueueTaskType, enqueueTask),
	command(StartTaskType, startTask),
	command(AppendTaskLogType, appendTaskLog),
	command(FinishTaskType, finishTask),
	command(CancelTaskType, cancelTask),
	commandVia(SetStatusType, noValue(setStatus), (*SetStatusRequest).wire, setStatusRequest),
	commandVia(SetUnitPortsType, setUnitPorts, (*SetUnitPortsRequest).wire, setUnitPortsRequest),
	command(SetWorkloadVersionType, setWorkloadVersion),
	command(SetResolvedType, setResolved),
	command(ClearResolvedType, clearResolved),
	command(AddMachineType, addMachine),
	command(SetMachineProvisionedType, setMachineProvisioned),
	command(DestroyMachineType, noValue(destroyMachine)),
	command(RemoveMachineType, noValue(removeMachine)),
	commandVia(CommitHookChangesType, noValue(commitHookChanges), (*CommitHookChangesRequest).wire, commitHookChangesRequest),
	command(CreateHubTokenType, noValue(createHubToken)),
	commandVia(SetHubTrustType, setHubTrust, (*SetHubTrustRequest).wire, setHubTrustRequest),
	command(RemoveHubTrustType, noValue(removeHubTrust)),
	command(SetPlacementType, setPlacement),
	command(SetTrustType, setTrust),
	command(CreateJoinTokenType, noValue(createJoinToken)),
	command(UseJoinTokenType, noValue(useJoinToken)),
	command(SetModelConstraintsType, setModelConstraints),
	command(AttachResourcesType, attachResources),
	command(QuiesceModelType, noValue(quiesceModel)),
	command(ReleaseModelType, noValue(releaseModel)),
	command(ImportModelType, noValue(importModel)),
	command(ActivateModelType, noValue(activateModel)),
	command(AbortImportType, noValue(abortImport)),
	commandVia(SetMigrationPhaseType, noValue(setMigrationPhase), (*SetMigrationPhaseRequest).wire, setMigrationPhaseRequest),
	command(ReapModelType, noValue(reapModel)),
	commandVia(ReportMinionType, noValue(reportMinion), (*ReportMinionRequest).wire, reportMinionRequest),
)

// commandEntry is one raft command: its number, its request struct, its
// codec and what applying it does.
type commandEntry struct {
	typ     MessageType
	name    string       // the request struct's name without "Request"
	request reflect.Type // the request struct Encode takes (or a pointer to it)
	// encode returns what to write as JSON for a request (its format
	// struct); decode reads it back into a new request.
	encode func(req any) any
	decode func(dec *json.Decoder) (any, error)
	apply  func(tx *Txn, req any) (any, error)
}

// command declares a command whose request is its own format struct (a
// format alias): the request struct is what apply takes.
func command[R, V any](t MessageType, apply func(*Txn, *R) (V, error)) commandEntry {
	return commandEntry{
		typ:     t,
		name:    strings.TrimSuffix(reflect.TypeFor[R]().Name(), "Request"),
		request: reflect.TypeFor[R](),
		encode:  func(req any) any { return req },
		decode: func(dec *json.Decoder) (any, error) {
			r := new(R)
			return r, dec.Decode(r)
		},
		apply: func(tx *Txn, req any) (any, error) { return apply(tx, req.(*R)) },
	}
}

// commandVia declares a command whose request carries api structs: its
// JSON is the format struct W, converted at the codec edge.
func commandVia[R, W, V any](t MessageType, apply func(*Txn, *R) (V, error), toFormat func(*R) *W, fromFormat func(*W) *R) commandEntry {
	c := command(t, apply)
	c.encode = func(req any) any {
		r, ok := req.(*R)
		if !ok {
			v := req.(R)
			r = &v
		}
		if r == nil {
			return nil
		}
		return toFormat(r)
	}
	c.decode = func(dec *json.Decoder) (any, error) {
		w := new(W)
		if err := dec.Decode(w); err != nil {
			return nil, err
		}
		return fromFormat(w), nil
	}
	return c
}

// noValue adapts an apply function that returns only an error: its
// ApplyResult.Value is nil.
func noValue[R any](apply func(*Txn, *R) error) func(*Txn, *R) (any, error) {
	return func(tx *Txn, req *R) (any, error) { return nil, apply(tx, req) }
}

// commandTable indexes the entries by MessageType. Two entries for one
// type are a programming error, caught when the package loads.
func commandTable(entries ...commandEntry) *[256]*commandEntry {
	var t [256]*commandEntry
	for i := range entries {
		e := &entries[i]
		if e.typ == 0 || t[e.typ] != nil {
			panic(fmt.Sprintf("state: MessageType %d declared twice or zero", e.typ))
		}
		t[e.typ] = e
	}
	guardMigrations(&t)
	return &t
}

// String names the type for logs, from its request struct.
func (t MessageType) String() string {
	if c := commands[t]; c != nil {
		return c.name
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// ErrUnknownMessageType is returned by Decode for a type this binary does not
// know: a log written by a newer version. It is an api.ErrInvalid.
var ErrUnknownMessageType = api.Errorf(api.CodeInvalid, "unknown raft message type")

// Encode is the one codec of raft commands: one type byte, then the
// request's format struct as JSON. req must be the request struct of t (or
// a pointer to it).
func Encode(t MessageType, req any) ([]byte, error) {
	c := commands[t]
	if c == nil {
		return nil, fmt.Errorf("encode %v: %w", t, ErrUnknownMessageType)
	}
	got := reflect.TypeOf(req)
	if got != nil && got.Kind() == reflect.Pointer {
		got = got.Elem()
	}
	if got != c.request {
		return nil, fmt.Errorf("encode %v: request is %v, want %v: %w", t, got, c.request, api.ErrBadRequest)
	}
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := json.NewEncoder(&buf).Encode(c.encode(req)); err != nil {
		return nil, fmt.Errorf("encode %v: %w", t, err)
	}
	return buf.Bytes(), nil
}

// Decode reverses Encode. The request comes back as a pointer to the
// request struct of the type (for example *AddModelRequest). An unknown type
// returns the type and an error wrapping ErrUnknownMessageType.
//
// Numbers inside map[string]any fields (config, params, results, status
// data) decode as json.Number, not float64, so that integers keep their
// exact value and a value re-encodes to the same bytes on every node.
func Decode(buf []byte) (MessageType, any, error) {
	t, _, req, err := decode(buf)
	return t, req, err
}

func decode(buf []byte) (MessageType, *commandEntry, any, error) {
	if len(buf) == 0 {
		return 0, nil, nil, fmt.Errorf("decode: empty command: %w", api.ErrBadRequest)
	}
	t := MessageType(buf[0])
	c := commands[t]
	if c == nil {
		return t, nil, nil, fmt.Errorf("decode %v: %w", t, ErrUnknownMessageType)
	}
	dec := json.NewDecoder(bytes.NewReader(buf[1:]))
	dec.UseNumber()
	req, err := c.decode(dec)
	if err != nil {
		return t, nil, nil, fmt.Errorf("decode %v: %w", t, err)
	}
	return t, c, req, nil
}
