package state

import (
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/state/tables"
	"github.com/hashicorp/go-memdb"
)

// Event kinds, one per watched table.
const (
	KindController     = "controller"
	KindControllerNode = "controller-node"
	KindUser           = "user"
	KindModel          = "model"
	KindCharm          = "charm"
	KindApplication    = "application"
	KindUnit           = "unit"
	KindMachine        = "machine"
	KindRelation       = "relation"
	KindRelationScope  = "relation-scope"
	KindRelationData   = "relation-data"
	KindLease          = "lease"
	KindTask           = "task"
	KindLeaderSettings = "leader-settings"
	KindModelConfig    = "model-config"
)

// eventsFrom turns a transaction's changes into events, in the order the
// changes were made. Credentials, status history, unit charm state and the
// index table produce none: secrets stay out of streams, history is read on
// demand, and charm state is read by its unit's agent on demand.
func eventsFrom(index uint64, changes memdb.Changes) []stream.Event {
	var out []stream.Event
	for _, c := range changes {
		obj, op := c.After, stream.OpUpsert
		if c.Deleted() {
			obj, op = c.Before, stream.OpDelete
		}
		e := stream.Event{Index: index, Op: op, Object: obj}
		switch o := obj.(type) {
		case *api.Controller:
			e.Kind, e.Key = KindController, o.UUID
		case *api.ControllerNode:
			e.Kind, e.Key = KindControllerNode, o.ID
		case *api.User:
			u := *o
			u.PasswordHash = ""
			e.Kind, e.Key, e.Object = KindUser, o.Name, &u
		case *api.Model:
			e.Kind, e.Key, e.ModelUUID = KindModel, o.UUID, o.UUID
		case *api.Charm:
			e.Kind, e.Key = KindCharm, o.SHA256
		case *api.Application:
			e.Kind, e.Key, e.ModelUUID = KindApplication, o.Name, o.ModelUUID
		case *api.Unit:
			e.Kind, e.Key, e.ModelUUID = KindUnit, o.Name, o.ModelUUID
		case *api.Machine:
			e.Kind, e.Key, e.ModelUUID = KindMachine, o.ID, o.ModelUUID
		case *api.Relation:
			e.Kind, e.Key, e.ModelUUID = KindRelation, fmt.Sprint(o.ID), o.ModelUUID
		case *api.RelationScope:
			e.Kind, e.Key, e.ModelUUID = KindRelationScope, fmt.Sprintf("%d/%s", o.RelationID, o.Unit), o.ModelUUID
		case *api.RelationData:
			e.Kind, e.Key, e.ModelUUID = KindRelationData, bagKey(o), o.ModelUUID
		case *api.Lease:
			e.Kind, e.Key, e.ModelUUID = KindLease, o.Application, o.ModelUUID
		case *api.Task:
			e.Kind, e.Key, e.ModelUUID = KindTask, o.ID, o.ModelUUID
		case *tables.AppLeaderSettings:
			e.Kind, e.Key, e.ModelUUID = KindLeaderSettings, o.Application, o.ModelUUID
		case *tables.ModelConfigEntry:
			e.Kind, e.Key, e.ModelUUID = KindModelConfig, o.Key, o.ModelUUID
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

func bagKey(d *api.RelationData) string {
	if d.App {
		return fmt.Sprintf("%d/app/%s", d.RelationID, d.Owner)
	}
	return fmt.Sprintf("%d/unit/%s", d.RelationID, d.Owner)
}
