package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

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
// cannot shift the values.
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
	// Append new types here, with the next free number.
)

// requestTypes maps every MessageType to its request struct. Encode and
// Decode both go through it, so a type and its body cannot disagree.
var requestTypes = map[MessageType]any{
	ControllerInitType:        ControllerInitRequest{},
	UpsertControllerNodeType:  UpsertControllerNodeRequest{},
	RemoveControllerNodeType:  RemoveControllerNodeRequest{},
	UpsertUserType:            UpsertUserRequest{},
	RemoveUserType:            RemoveUserRequest{},
	SetCredentialType:         SetCredentialRequest{},
	RemoveCredentialType:      RemoveCredentialRequest{},
	AddModelType:              AddModelRequest{},
	SetModelConfigType:        SetModelConfigRequest{},
	DestroyModelType:          DestroyModelRequest{},
	RemoveModelType:           RemoveModelRequest{},
	AddCharmType:              AddCharmRequest{},
	AddApplicationType:        AddApplicationRequest{},
	SetApplicationConfigType:  SetApplicationConfigRequest{},
	SetCharmType:              SetCharmRequest{},
	SetExposedType:            SetExposedRequest{},
	SetConstraintsType:        SetConstraintsRequest{},
	AddUnitsType:              AddUnitsRequest{},
	ScaleApplicationType:      ScaleApplicationRequest{},
	DestroyUnitsType:          DestroyUnitsRequest{},
	EnsureUnitDeadType:        EnsureUnitDeadRequest{},
	RemoveUnitType:            RemoveUnitRequest{},
	DestroyApplicationType:    DestroyApplicationRequest{},
	AddRelationType:           AddRelationRequest{},
	DestroyRelationType:       DestroyRelationRequest{},
	EnterScopeType:            EnterScopeRequest{},
	LeaveScopeType:            LeaveScopeRequest{},
	SetRelationDataType:       SetRelationDataRequest{},
	ClaimLeaseType:            ClaimLeaseRequest{},
	RevokeLeaseType:           RevokeLeaseRequest{},
	ExpireLeasesType:          ExpireLeasesRequest{},
	EnqueueTaskType:           EnqueueTaskRequest{},
	StartTaskType:             StartTaskRequest{},
	AppendTaskLogType:         AppendTaskLogRequest{},
	FinishTaskType:            FinishTaskRequest{},
	CancelTaskType:            CancelTaskRequest{},
	SetStatusType:             SetStatusRequest{},
	SetUnitPortsType:          SetUnitPortsRequest{},
	SetWorkloadVersionType:    SetWorkloadVersionRequest{},
	SetResolvedType:           SetResolvedRequest{},
	ClearResolvedType:         ClearResolvedRequest{},
	AddMachineType:            AddMachineRequest{},
	SetMachineProvisionedType: SetMachineProvisionedRequest{},
	DestroyMachineType:        DestroyMachineRequest{},
	RemoveMachineType:         RemoveMachineRequest{},
	CommitHookChangesType:     CommitHookChangesRequest{},
	CreateHubTokenType:        CreateHubTokenRequest{},
	SetHubTrustType:           SetHubTrustRequest{},
	RemoveHubTrustType:        RemoveHubTrustRequest{},
	SetTrustType:              SetTrustRequest{},
	SetPlacementType:          SetPlacementRequest{},
}

// String names the type for logs, from its request struct.
func (t MessageType) String() string {
	if r, ok := requestTypes[t]; ok {
		n := reflect.TypeOf(r).Name()
		return n[:len(n)-len("Request")]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// ErrUnknownMessageType is returned by Decode for a type this binary does not
// know: a log written by a newer version. It is an api.ErrInvalid.
var ErrUnknownMessageType = api.Errorf(api.CodeInvalid, "unknown raft message type")

// Encode is the one codec of raft commands: one type byte, then the request
// as JSON. req must be the request struct of t (or a pointer to it).
func Encode(t MessageType, req any) ([]byte, error) {
	want, ok := requestTypes[t]
	if !ok {
		return nil, fmt.Errorf("encode %v: %w", t, ErrUnknownMessageType)
	}
	got := reflect.TypeOf(req)
	if got != nil && got.Kind() == reflect.Pointer {
		got = got.Elem()
	}
	if got != reflect.TypeOf(want) {
		return nil, fmt.Errorf("encode %v: request is %v, want %T: %w", t, got, want, api.ErrBadRequest)
	}
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := json.NewEncoder(&buf).Encode(req); err != nil {
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
	if len(buf) == 0 {
		return 0, nil, fmt.Errorf("decode: empty command: %w", api.ErrBadRequest)
	}
	t := MessageType(buf[0])
	proto, ok := requestTypes[t]
	if !ok {
		return t, nil, fmt.Errorf("decode %v: %w", t, ErrUnknownMessageType)
	}
	req := reflect.New(reflect.TypeOf(proto)).Interface()
	dec := json.NewDecoder(bytes.NewReader(buf[1:]))
	dec.UseNumber()
	if err := dec.Decode(req); err != nil {
		return t, nil, fmt.Errorf("decode %v: %w", t, err)
	}
	return t, req, nil
}
