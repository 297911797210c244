package tables

import (
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Table names. Every table is listed in All or in Derived, which the
// snapshot code and its tests iterate, so a new table cannot be forgotten
// there.
const (
	Index           = "index"
	Controller      = "controller"
	ControllerNodes = "controller_nodes"
	Users           = "users"
	Credentials     = "credentials"
	Models          = "models"
	Charms          = "charms"
	Applications    = "applications"
	Units           = "units"
	Machines        = "machines"
	Relations       = "relations"
	RelationScopes  = "relation_scopes"
	RelationData    = "relation_data"
	Leases          = "leases"
	Tasks           = "tasks"
	StatusHistory   = "status_history"
	UnitState       = "unit_state"
	LeaderSettings  = "leader_settings"
	ModelConfig     = "model_config"
	HubTrust        = "hub_trust"
	HubTokens       = "hub_tokens"
	JoinTokens      = "join_tokens"
	Resources       = "resources"
	// Tombstones are controller-level: a reaped model's rows are gone,
	// its tombstone stays (ReapModel).
	Tombstones = "tombstones"
	// StatusRevisions is derived: see statusrev.go.
	StatusRevisions = "status_revisions"
)

// Derived lists the tables left out of snapshots: what they hold is
// derived from the writes, and a restored store starts them empty (statusrev.go says
// why that is safe). Snapshots stay readable by controllers that lack them.
var Derived = []string{StatusRevisions}

// All is the fixed order of tables in snapshots.
var All = []string{
	Index, Controller, ControllerNodes, Users, Credentials,
	Models, Charms, Applications, Units, Machines,
	Relations, RelationScopes, RelationData, Leases, Tasks,
	StatusHistory, UnitState, LeaderSettings, ModelConfig,
	HubTrust, HubTokens, JoinTokens, Resources, Tombstones,
}

// IndexEntry records the last raft index that modified a table.
type IndexEntry struct {
	Key   string `json:"key"`
	Value uint64 `json:"value"`
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func compound(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }

func idIndex(ix memdb.Indexer) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: ix}
}

func byIndex(name string, ix memdb.Indexer, allowMissing bool) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Indexer: ix, AllowMissing: allowMissing}
}

func table(name string, ix ...*memdb.IndexSchema) *memdb.TableSchema {
	t := &memdb.TableSchema{Name: name, Indexes: map[string]*memdb.IndexSchema{}}
	for _, i := range ix {
		t.Indexes[i.Name] = i
	}
	return t
}

// schema builds the memdb schema. Model-scoped tables key on (model, name)
// and have a "model" index so a model's contents can be listed and removed
// (model config lists them by primary-key prefix instead; see state's
// byModel).
func Schema() *memdb.DBSchema {
	modelIdx := byIndex("model", str("ModelUUID"), false)
	relIdx := byIndex("relation", compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"}), false)
	tables := []*memdb.TableSchema{
		table(Index, idIndex(str("Key"))),
		table(Controller, idIndex(str("UUID"))),
		table(ControllerNodes, idIndex(str("ID"))),
		table(Users, idIndex(str("Name"))),
		table(Credentials, idIndex(str("Tag")), byIndex("model", str("ModelUUID"), true)),
		table(Models, idIndex(str("UUID")),
			&memdb.IndexSchema{Name: "name", Unique: true, Indexer: compound(str("Owner"), str("Name"))}),
		table(Charms, idIndex(str("SHA256"))),
		table(Applications, idIndex(compound(str("ModelUUID"), str("Name"))), modelIdx,
			byIndex("charm", str("CharmSHA256"), false)),
		table(Units, idIndex(compound(str("ModelUUID"), str("Name"))), modelIdx,
			byIndex("application", compound(str("ModelUUID"), str("Application")), false),
			byIndex("machine", compound(str("ModelUUID"), str("MachineID")), true),
			byIndex("principal", compound(str("ModelUUID"), str("Principal")), true)),
		table(Machines, idIndex(compound(str("ModelUUID"), str("ID"))), modelIdx),
		table(Relations,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "ID"})), modelIdx,
			&memdb.IndexSchema{Name: "key", Unique: true, Indexer: compound(str("ModelUUID"), str("Key"))},
			byIndex("application", relationAppIndexer{}, false)),
		table(RelationScopes,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"}, str("Unit"))),
			modelIdx, relIdx, byIndex("unit", compound(str("ModelUUID"), str("Unit")), false)),
		table(RelationData,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"},
				&memdb.BoolFieldIndex{Field: "App"}, str("Owner"))),
			modelIdx, relIdx, byIndex("owner", compound(str("ModelUUID"), str("Owner")), false)),
		table(Leases, idIndex(compound(str("ModelUUID"), str("Application"))), modelIdx),
		table(Tasks, idIndex(compound(str("ModelUUID"), str("ID"))), modelIdx,
			byIndex("receiver", compound(str("ModelUUID"), str("Receiver")), false),
			byIndex("status", compound(str("ModelUUID"), str("Status")), false)),
		table(StatusHistory,
			idIndex(compound(str("ModelUUID"), str("Entity"), str("Kind"), &memdb.UintFieldIndex{Field: "Seq"})),
			modelIdx, byIndex("entity", compound(str("ModelUUID"), str("Entity"), str("Kind")), false)),
		table(UnitState, idIndex(compound(str("ModelUUID"), str("Unit"))), modelIdx),
		table(ModelConfig, idIndex(modelConfigID{})), // by model: state's byModel
		table(LeaderSettings, idIndex(compound(str("ModelUUID"), str("Application"))), modelIdx),
		table(HubTrust, idIndex(str("Key"))),
		table(HubTokens, idIndex(str("Hash"))),
		table(JoinTokens, idIndex(str("Hash"))),
		table(Resources, idIndex(compound(str("ModelUUID"), str("Application"), str("Name"))), modelIdx,
			byIndex("application", compound(str("ModelUUID"), str("Application")), false)),
		table(Tombstones, idIndex(str("ModelUUID"))),
		table(StatusRevisions, idIndex(str("ModelUUID"))),
	}
	s := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	for _, t := range tables {
		s.Tables[t.Name] = t
	}
	return s
}

// relationAppIndexer indexes a relation under (model, app) for each of its
// applications, so RelationsByApplication is one lookup.
type relationAppIndexer struct{}

func (relationAppIndexer) FromObject(obj any) (bool, [][]byte, error) {
	r, ok := obj.(*api.Relation)
	if !ok {
		return false, nil, fmt.Errorf("relation index: unexpected %T", obj)
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, ep := range r.Endpoints {
		if seen[ep.Application] {
			continue
		}
		seen[ep.Application] = true
		out = append(out, []byte(r.ModelUUID+"\x00"+ep.Application+"\x00"))
	}
	return len(out) > 0, out, nil
}

func (relationAppIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("relation index: want model and application")
	}
	m, ok1 := args[0].(string)
	a, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("relation index: arguments must be strings")
	}
	return []byte(m + "\x00" + a + "\x00"), nil
}
