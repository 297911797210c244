package state

import (
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Table names. Every table is listed in allTables, which the snapshot code
// and its round-trip test iterate, so a new table cannot be forgotten there.
const (
	tableIndex           = "index"
	tableController      = "controller"
	tableControllerNodes = "controller_nodes"
	tableUsers           = "users"
	tableCredentials     = "credentials"
	tableModels          = "models"
	tableCharms          = "charms"
	tableApplications    = "applications"
	tableUnits           = "units"
	tableMachines        = "machines"
	tableRelations       = "relations"
	tableRelationScopes  = "relation_scopes"
	tableRelationData    = "relation_data"
	tableLeases          = "leases"
	tableTasks           = "tasks"
	tableStatusHistory   = "status_history"
	tableUnitState       = "unit_state"
	tableLeaderSettings  = "leader_settings"
	tableModelConfig     = "model_config"
	tableHubTrust        = "hub_trust"
	tableHubTokens       = "hub_tokens"
	// tableStatusRevisions is derived: see statusrev.go.
	tableStatusRevisions = "status_revisions"
)

// derivedTables are left out of snapshots: what they hold is derived from
// the writes, and a restored store starts them empty (statusrev.go says
// why that is safe). Snapshots stay readable by controllers that lack them.
var derivedTables = []string{tableStatusRevisions}

// allTables is the fixed order of tables in snapshots.
var allTables = []string{
	tableIndex, tableController, tableControllerNodes, tableUsers, tableCredentials,
	tableModels, tableCharms, tableApplications, tableUnits, tableMachines,
	tableRelations, tableRelationScopes, tableRelationData, tableLeases, tableTasks,
	tableStatusHistory, tableUnitState, tableLeaderSettings, tableModelConfig,
	tableHubTrust, tableHubTokens,
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
// (model config lists them by primary-key prefix instead; see byModel).
func schema() *memdb.DBSchema {
	modelIdx := byIndex("model", str("ModelUUID"), false)
	relIdx := byIndex("relation", compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"}), false)
	tables := []*memdb.TableSchema{
		table(tableIndex, idIndex(str("Key"))),
		table(tableController, idIndex(str("UUID"))),
		table(tableControllerNodes, idIndex(str("ID"))),
		table(tableUsers, idIndex(str("Name"))),
		table(tableCredentials, idIndex(str("Tag")), byIndex("model", str("ModelUUID"), true)),
		table(tableModels, idIndex(str("UUID")),
			&memdb.IndexSchema{Name: "name", Unique: true, Indexer: compound(str("Owner"), str("Name"))}),
		table(tableCharms, idIndex(str("SHA256"))),
		table(tableApplications, idIndex(compound(str("ModelUUID"), str("Name"))), modelIdx,
			byIndex("charm", str("CharmSHA256"), false)),
		table(tableUnits, idIndex(compound(str("ModelUUID"), str("Name"))), modelIdx,
			byIndex("application", compound(str("ModelUUID"), str("Application")), false),
			byIndex("machine", compound(str("ModelUUID"), str("MachineID")), true),
			byIndex("principal", compound(str("ModelUUID"), str("Principal")), true)),
		table(tableMachines, idIndex(compound(str("ModelUUID"), str("ID"))), modelIdx),
		table(tableRelations,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "ID"})), modelIdx,
			&memdb.IndexSchema{Name: "key", Unique: true, Indexer: compound(str("ModelUUID"), str("Key"))},
			byIndex("application", relationAppIndexer{}, false)),
		table(tableRelationScopes,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"}, str("Unit"))),
			modelIdx, relIdx, byIndex("unit", compound(str("ModelUUID"), str("Unit")), false)),
		table(tableRelationData,
			idIndex(compound(str("ModelUUID"), &memdb.IntFieldIndex{Field: "RelationID"},
				&memdb.BoolFieldIndex{Field: "App"}, str("Owner"))),
			modelIdx, relIdx, byIndex("owner", compound(str("ModelUUID"), str("Owner")), false)),
		table(tableLeases, idIndex(compound(str("ModelUUID"), str("Application"))), modelIdx),
		table(tableTasks, idIndex(compound(str("ModelUUID"), str("ID"))), modelIdx,
			byIndex("receiver", compound(str("ModelUUID"), str("Receiver")), false),
			byIndex("status", compound(str("ModelUUID"), str("Status")), false)),
		table(tableStatusHistory,
			idIndex(compound(str("ModelUUID"), str("Entity"), str("Kind"), &memdb.UintFieldIndex{Field: "Seq"})),
			modelIdx, byIndex("entity", compound(str("ModelUUID"), str("Entity"), str("Kind")), false)),
		table(tableUnitState, idIndex(compound(str("ModelUUID"), str("Unit"))), modelIdx),
		table(tableModelConfig, idIndex(modelConfigID{})), // by model: byModel
		table(tableLeaderSettings, idIndex(compound(str("ModelUUID"), str("Application"))), modelIdx),
		table(tableHubTrust, idIndex(str("Key"))),
		table(tableHubTokens, idIndex(str("Hash"))),
		table(tableStatusRevisions, idIndex(str("ModelUUID"))),
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
