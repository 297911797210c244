package state

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/raft"
)

// ApplyResult is what FSM.Apply returns to the proposer (through
// raft.ApplyFuture.Response). Err is an *api.Error or wraps one.
type ApplyResult struct {
	Value any
	Err   error
}

// FSMConfig holds the FSM's dependencies.
type FSMConfig struct {
	Logger *slog.Logger
	// EventBufferSize is the number of event batches kept for resuming
	// subscribers; 0 means DefaultEventBufferSize.
	EventBufferSize int
}

// FSM is the raft state machine: it applies commands to the Store and
// publishes their events.
type FSM struct {
	logger *slog.Logger
	store  *Store
	events *EventBroker
}

var _ raft.FSM = (*FSM)(nil)

// NewFSM returns an FSM over an empty store.
func NewFSM(cfg FSMConfig) (*FSM, error) {
	if cfg.Logger == nil {
		return nil, errors.New("state: FSMConfig.Logger is required")
	}
	if cfg.EventBufferSize < 0 {
		return nil, errors.New("state: FSMConfig.EventBufferSize is negative")
	}
	s, err := NewStore()
	if err != nil {
		return nil, err
	}
	return &FSM{logger: cfg.Logger, store: s, events: NewEventBroker(cfg.EventBufferSize)}, nil
}

// Store is the store the FSM applies to; read it, never write it.
func (f *FSM) Store() *Store { return f.store }

// Events is the broker the FSM publishes to.
func (f *FSM) Events() *EventBroker { return f.events }

// Apply applies one committed command. It never panics on a command it
// cannot decode: a log entry written by a newer version (an unknown
// MessageType) is logged and answered with an error result, and the entry
// changes nothing, so an older node keeps running until it is upgraded.
// Apply is deterministic: the same log gives the same store on every node.
func (f *FSM) Apply(l *raft.Log) any {
	res, events := f.apply(l.Index, l.Data)
	f.events.Publish(l.Index, events)
	return res
}

// ApplyBatch applies the commands of one group-committed raft entry in
// order, each atomically on its own, and publishes their events once, at
// the entry's index (watchers resume by index, so one index must be one
// event batch).
func (f *FSM) ApplyBatch(index uint64, cmds [][]byte) []any {
	out := make([]any, len(cmds))
	// Fast path: every command decodes and succeeds, in one transaction.
	fns := make([]func(tx *Txn) (any, error), 0, len(cmds))
	for _, c := range cmds {
		_, req, err := Decode(c)
		if err != nil {
			fns = nil
			break
		}
		fns = append(fns, func(tx *Txn) (any, error) { return applyRequest(tx, req) })
	}
	if fns != nil {
		if vals, events, ok := f.store.UpdateAll(index, fns); ok {
			for i, v := range vals {
				out[i] = ApplyResult{Value: v}
			}
			f.events.Publish(index, events)
			return out
		}
	}
	// Slow path: one transaction per command, so a failing one changes
	// nothing and the others still apply.
	var all []Event
	for i, c := range cmds {
		res, events := f.apply(index, c)
		out[i] = res
		all = append(all, events...)
	}
	f.events.Publish(index, all)
	return out
}

func (f *FSM) apply(index uint64, data []byte) (ApplyResult, []Event) {
	t, req, err := Decode(data)
	if err != nil {
		f.logger.Error("cannot decode raft command; skipped", "index", index, "type", t, "err", err)
		return ApplyResult{Err: err}, nil
	}
	v, events, err := f.store.Update(index, func(tx *Txn) (any, error) { return applyRequest(tx, req) })
	if err != nil {
		if api.CodeOf(err) == api.CodeInternal {
			f.logger.Error("raft command failed", "index", index, "type", t, "err", err)
		}
		// Returned as is: the *api.Error's message is the user-facing text.
		return ApplyResult{Err: err}, nil
	}
	return ApplyResult{Value: v}, events
}

// applyRequest is the one switch from request to store command.
func applyRequest(tx *Txn, req any) (any, error) {
	switch r := req.(type) {
	case *ControllerInitRequest:
		return tx.ControllerInit(r)
	case *SetPlacementRequest:
		return tx.SetPlacement(r)
	case *UpsertControllerNodeRequest:
		return tx.UpsertControllerNode(r)
	case *RemoveControllerNodeRequest:
		return nil, tx.RemoveControllerNode(r)
	case *UpsertUserRequest:
		return tx.UpsertUser(r)
	case *RemoveUserRequest:
		return nil, tx.RemoveUser(r)
	case *SetCredentialRequest:
		return tx.SetCredential(r)
	case *RemoveCredentialRequest:
		return nil, tx.RemoveCredential(r)
	case *AddModelRequest:
		return tx.AddModel(r)
	case *SetModelConfigRequest:
		return tx.SetModelConfig(r)
	case *DestroyModelRequest:
		return tx.DestroyModel(r)
	case *RemoveModelRequest:
		return nil, tx.RemoveModel(r)
	case *AddCharmRequest:
		return tx.AddCharm(r)
	case *AddApplicationRequest:
		return tx.AddApplication(r)
	case *SetApplicationConfigRequest:
		return tx.SetApplicationConfig(r)
	case *SetCharmRequest:
		return tx.SetCharm(r)
	case *SetExposedRequest:
		return tx.SetExposed(r)
	case *SetTrustRequest:
		return tx.SetTrust(r)
	case *SetConstraintsRequest:
		return tx.SetConstraints(r)
	case *AddUnitsRequest:
		return tx.AddUnits(r)
	case *ScaleApplicationRequest:
		return tx.ScaleApplication(r)
	case *DestroyUnitsRequest:
		return nil, tx.DestroyUnits(r)
	case *EnsureUnitDeadRequest:
		return nil, tx.EnsureUnitDead(r)
	case *RemoveUnitRequest:
		return nil, tx.RemoveUnit(r)
	case *DestroyApplicationRequest:
		return nil, tx.DestroyApplication(r)
	case *AddRelationRequest:
		return tx.AddRelation(r)
	case *DestroyRelationRequest:
		return nil, tx.DestroyRelation(r)
	case *EnterScopeRequest:
		return nil, tx.EnterScope(r)
	case *LeaveScopeRequest:
		return nil, tx.LeaveScope(r)
	case *SetRelationDataRequest:
		return tx.SetRelationData(r)
	case *ClaimLeaseRequest:
		return tx.ClaimLease(r)
	case *RevokeLeaseRequest:
		return nil, tx.RevokeLease(r)
	case *ExpireLeasesRequest:
		return tx.ExpireLeases(r)
	case *EnqueueTaskRequest:
		return tx.EnqueueTask(r)
	case *StartTaskRequest:
		return tx.StartTask(r)
	case *AppendTaskLogRequest:
		return tx.AppendTaskLog(r)
	case *FinishTaskRequest:
		return tx.FinishTask(r)
	case *CancelTaskRequest:
		return tx.CancelTask(r)
	case *SetStatusRequest:
		return nil, tx.SetStatus(r)
	case *SetUnitPortsRequest:
		return tx.SetUnitPorts(r)
	case *SetWorkloadVersionRequest:
		return tx.SetWorkloadVersion(r)
	case *SetResolvedRequest:
		return tx.SetResolved(r)
	case *ClearResolvedRequest:
		return tx.ClearResolved(r)
	case *AddMachineRequest:
		return tx.AddMachine(r)
	case *SetMachineProvisionedRequest:
		return tx.SetMachineProvisioned(r)
	case *DestroyMachineRequest:
		return nil, tx.DestroyMachine(r)
	case *RemoveMachineRequest:
		return nil, tx.RemoveMachine(r)
	case *CommitHookChangesRequest:
		return nil, tx.CommitHookChanges(r)
	case *CreateHubTokenRequest:
		return nil, tx.CreateHubToken(r)
	case *SetHubTrustRequest:
		return tx.SetHubTrust(r)
	case *RemoveHubTrustRequest:
		return nil, tx.RemoveHubTrust(r)
	}
	return nil, internalf("no handler for request %T", req)
}

// Snapshot captures the store as of now; Persist streams it later, off
// the apply path, from the immutable memdb view.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.store.Snapshot()}, nil
}

// Restore replaces the whole store with a snapshot and makes every event
// subscriber resynchronise.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.store.Restore(rc); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	idx, err := f.store.Snapshot().LatestIndex()
	if err != nil {
		return err
	}
	f.events.Reset(idx)
	return nil
}

type fsmSnapshot struct {
	snap *Snapshot
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := WriteSnapshot(s.snap, sink); err != nil {
		if cerr := sink.Cancel(); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
