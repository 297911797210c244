package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/format"
	"github.com/hashicorp/go-memdb"
)

// Snapshots are streams of format records (format.SnapshotWriter): the
// tables in All order, each table in primary-key order, so the same
// state always gives the same bytes. Each record is the format struct of
// one stored object, converted at this edge.

// snapshotTable says how one table is written to and read from a snapshot.
type snapshotTable struct {
	rec    format.RecordType
	encode func(obj any) any
	decode func(data []byte) (any, error)
}

// record converts a stored *T to its format struct *W and back.
func record[T, W any](rec format.RecordType, toFormat func(*T) *W, fromFormat func(*W) *T) snapshotTable {
	return snapshotTable{
		rec:    rec,
		encode: func(obj any) any { return toFormat(obj.(*T)) },
		decode: func(data []byte) (any, error) {
			w := new(W)
			if err := unmarshal(data, w); err != nil {
				return nil, err
			}
			return fromFormat(w), nil
		},
	}
}

// snapshotTables covers every table; TestSchemaTablesHaveRecords (and
// state's TestSnapshotRoundTrip) fail for a schema table missing here.
var snapshotTables = map[string]snapshotTable{
	Index:           record(format.RecIndex, indexRecord, indexEntryFromRecord),
	Controller:      record(format.RecController, format.FromController, (*format.Controller).API),
	ControllerNodes: record(format.RecControllerNode, format.FromControllerNode, (*format.ControllerNode).API),
	Users:           record(format.RecUser, format.FromUserRecord, userFromRecord),
	Credentials:     record(format.RecCredential, format.FromCredential, (*format.Credential).API),
	Models:          record(format.RecModel, format.FromModel, (*format.Model).API),
	Charms:          record(format.RecCharm, format.FromCharm, (*format.Charm).API),
	Applications:    record(format.RecApplication, format.FromApplication, (*format.Application).API),
	Units:           record(format.RecUnit, format.FromUnit, (*format.Unit).API),
	Machines:        record(format.RecMachine, format.FromMachine, (*format.Machine).API),
	Relations:       record(format.RecRelation, format.FromRelation, (*format.Relation).API),
	RelationScopes:  record(format.RecRelationScope, format.FromRelationScope, (*format.RelationScope).API),
	RelationData:    record(format.RecRelationData, format.FromRelationData, (*format.RelationData).API),
	Leases:          record(format.RecLease, format.FromLease, (*format.Lease).API),
	Tasks:           record(format.RecTask, format.FromTask, (*format.Task).API),
	StatusHistory:   record(format.RecStatusHistory, format.FromStatusHistoryEntry, (*format.StatusHistoryEntry).API),
	UnitState:       record(format.RecUnitState, unitStateRecord, unitStateFromRecord),
	ModelConfig:     record(format.RecModelConfig, modelConfigRecord, modelConfigFromRecord),
	LeaderSettings:  record(format.RecLeaderSettings, leaderSettingsRecord, leaderSettingsFromRecord),
	HubTrust:        record(format.RecHubTrust, hubTrustRecord, hubTrustFromRecord),
	HubTokens:       record(format.RecHubToken, hubTokenRecord, hubTokenFromRecord),
	JoinTokens:      record(format.RecJoinToken, joinTokenRecord, joinTokenFromRecord),
	Resources:       record(format.RecResource, format.FromResource, (*format.Resource).API),
	Tombstones:      record(format.RecTombstone, tombstoneRecord, tombstoneFromRecord),
}

func userFromRecord(r *format.UserRecord) *api.User {
	if r.User == nil {
		return nil
	}
	return r.User.API(r.PasswordHash)
}

func indexRecord(e *IndexEntry) *format.IndexEntry          { return (*format.IndexEntry)(e) }
func indexEntryFromRecord(e *format.IndexEntry) *IndexEntry { return (*IndexEntry)(e) }

func unitStateRecord(s *UnitCharmState) *format.UnitState {
	return &format.UnitState{ModelUUID: s.ModelUUID, Unit: s.Unit, State: s.State, Meta: format.Meta(s.Meta)}
}

func unitStateFromRecord(s *format.UnitState) *UnitCharmState {
	return &UnitCharmState{ModelUUID: s.ModelUUID, Unit: s.Unit, State: s.State, Meta: api.Meta(s.Meta)}
}

func modelConfigRecord(e *ModelConfigEntry) *format.ModelConfigEntry {
	return &format.ModelConfigEntry{ModelUUID: e.ModelUUID, Key: e.Key, Value: e.Value, Meta: format.Meta(e.Meta)}
}

func modelConfigFromRecord(e *format.ModelConfigEntry) *ModelConfigEntry {
	return &ModelConfigEntry{ModelUUID: e.ModelUUID, Key: e.Key, Value: e.Value, Meta: api.Meta(e.Meta)}
}

func leaderSettingsRecord(s *AppLeaderSettings) *format.LeaderSettings {
	return &format.LeaderSettings{ModelUUID: s.ModelUUID, Application: s.Application, Settings: s.Settings,
		Version: s.Version, Meta: format.Meta(s.Meta)}
}

func leaderSettingsFromRecord(s *format.LeaderSettings) *AppLeaderSettings {
	return &AppLeaderSettings{ModelUUID: s.ModelUUID, Application: s.Application, Settings: s.Settings,
		Version: s.Version, Meta: api.Meta(s.Meta)}
}

func hubTrustRecord(r *HubTrustRecord) *format.HubTrustRecord {
	return &format.HubTrustRecord{Key: r.Key, Trust: format.FromHubTrust(r.Trust), FlagDigests: r.FlagDigests, Meta: format.Meta(r.Meta)}
}

func hubTrustFromRecord(r *format.HubTrustRecord) *HubTrustRecord {
	return &HubTrustRecord{Key: r.Key, Trust: r.Trust.API(), FlagDigests: r.FlagDigests, Meta: api.Meta(r.Meta)}
}

func hubTokenRecord(t *HubToken) *format.HubToken {
	return &format.HubToken{Hash: t.Hash, Expires: t.Expires, Used: t.Used, Meta: format.Meta(t.Meta)}
}

func hubTokenFromRecord(t *format.HubToken) *HubToken {
	return &HubToken{Hash: t.Hash, Expires: t.Expires, Used: t.Used, Meta: api.Meta(t.Meta)}
}

func joinTokenRecord(t *JoinToken) *format.JoinToken {
	return &format.JoinToken{Hash: t.Hash, Expires: t.Expires, Used: t.Used, Node: t.Node, Meta: format.Meta(t.Meta)}
}

func joinTokenFromRecord(t *format.JoinToken) *JoinToken {
	return &JoinToken{Hash: t.Hash, Expires: t.Expires, Used: t.Used, Node: t.Node, Meta: api.Meta(t.Meta)}
}

func tombstoneRecord(t *Tombstone) *format.Tombstone {
	return &format.Tombstone{ModelUUID: t.ModelUUID, ModelName: t.ModelName, Owner: t.Owner, MigrationID: t.MigrationID,
		Target: format.TargetController(t.Target), Time: t.Time, Agents: t.Agents, Meta: format.Meta(t.Meta)}
}

func tombstoneFromRecord(t *format.Tombstone) *Tombstone {
	return &Tombstone{ModelUUID: t.ModelUUID, ModelName: t.ModelName, Owner: t.Owner, MigrationID: t.MigrationID,
		Target: api.TargetController(t.Target), Time: t.Time, Agents: t.Agents, Meta: api.Meta(t.Meta)}
}

// unmarshal decodes numbers in untyped maps as json.Number, as
// state.Decode does, so a restored store encodes to the same bytes as the
// original.
func unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// Record returns the snapshot record of obj, a row of table: its record
// type and its format struct. ok is false for a table without snapshot
// support.
func Record(table string, obj any) (rec format.RecordType, v any, ok bool) {
	st, ok := snapshotTables[table]
	if !ok {
		return 0, nil, false
	}
	return st.rec, st.encode(obj), true
}

// WriteSnapshot streams every object that txn sees to w.
func WriteSnapshot(txn *memdb.Txn, w io.Writer) error {
	sw, err := format.NewSnapshotWriter(w)
	if err != nil {
		return err
	}
	for _, name := range All {
		if _, ok := snapshotTables[name]; !ok {
			return internalf("table %q has no snapshot support", name)
		}
		it, err := txn.Get(name, "id")
		if err != nil {
			return internalf("snapshot %s: %v", name, err)
		}
		for obj := it.Next(); obj != nil; obj = it.Next() {
			rec, v, _ := Record(name, obj)
			if err := sw.Write(rec, v); err != nil {
				return fmt.Errorf("snapshot %s: %w", name, err)
			}
		}
	}
	return sw.Flush()
}

// ReadSnapshot builds a new database from a snapshot stream.
func ReadSnapshot(r io.Reader) (*memdb.MemDB, error) {
	db, err := memdb.NewMemDB(Schema())
	if err != nil {
		return nil, fmt.Errorf("state schema: %w", err)
	}
	byRec := map[format.RecordType]string{}
	for name, st := range snapshotTables {
		byRec[st.rec] = name
	}
	sr, err := format.NewSnapshotReader(r)
	if err != nil {
		return nil, err
	}
	txn := db.Txn(true)
	defer txn.Abort()
	for {
		rt, data, err := sr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name, ok := byRec[rt]
		if !ok {
			return nil, fmt.Errorf("snapshot record type %d unknown", rt)
		}
		obj, err := snapshotTables[name].decode(data)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s record: %w", name, err)
		}
		if obj == nil || reflect.ValueOf(obj).IsNil() {
			return nil, fmt.Errorf("snapshot %s record without its object", name)
		}
		if err := txn.Insert(name, obj); err != nil {
			return nil, fmt.Errorf("snapshot %s insert: %w", name, err)
		}
	}
	txn.Commit()
	return db, nil
}
