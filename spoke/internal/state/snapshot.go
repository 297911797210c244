package state

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Snapshot stream format: one version byte, then per object one record:
// a record-type byte, a uvarint length and the object as JSON. Records
// appear table by table in allTables order, each table in primary-key
// order, so the same state always gives the same bytes.
//
// Record types are permanent, like MessageType: never renumber them.
const snapshotVersion = 1

type recordType uint8

const (
	recIndex          recordType = 1
	recController     recordType = 2
	recControllerNode recordType = 3
	recUser           recordType = 4
	recCredential     recordType = 5
	recModel          recordType = 6
	recCharm          recordType = 7
	recApplication    recordType = 8
	recUnit           recordType = 9
	recMachine        recordType = 10
	recRelation       recordType = 11
	recRelationScope  recordType = 12
	recRelationData   recordType = 13
	recLease          recordType = 14
	recTask           recordType = 15
	recStatusHistory  recordType = 16
	recUnitState      recordType = 17
	recLeaderSettings recordType = 18
	recModelConfig    recordType = 19
	recHubTrust       recordType = 20
	recHubToken       recordType = 21
)

// userRecord carries the password hash that api.User keeps out of JSON.
type userRecord struct {
	User         *api.User `json:"user"`
	PasswordHash string    `json:"password-hash,omitempty"`
}

// snapshotTable says how one table is written to and read from a snapshot.
type snapshotTable struct {
	rec    recordType
	encode func(obj any) any
	decode func(data []byte) (any, error)
}

func plain[T any](rec recordType) snapshotTable {
	return snapshotTable{
		rec:    rec,
		encode: func(obj any) any { return obj },
		decode: func(data []byte) (any, error) {
			v := new(T)
			return v, unmarshal(data, v)
		},
	}
}

// snapshotTables covers every table; TestSnapshotRoundTrip fails for a
// schema table missing here.
var snapshotTables = map[string]snapshotTable{
	tableIndex:           plain[IndexEntry](recIndex),
	tableController:      plain[api.Controller](recController),
	tableControllerNodes: plain[api.ControllerNode](recControllerNode),
	tableUsers: {
		rec: recUser,
		encode: func(obj any) any {
			u := obj.(*api.User)
			return userRecord{User: u, PasswordHash: u.PasswordHash}
		},
		decode: func(data []byte) (any, error) {
			var r userRecord
			if err := unmarshal(data, &r); err != nil {
				return nil, err
			}
			if r.User == nil {
				return nil, fmt.Errorf("user record without user")
			}
			r.User.PasswordHash = r.PasswordHash
			return r.User, nil
		},
	},
	tableCredentials:    plain[api.Credential](recCredential),
	tableModels:         plain[api.Model](recModel),
	tableCharms:         plain[api.Charm](recCharm),
	tableApplications:   plain[api.Application](recApplication),
	tableUnits:          plain[api.Unit](recUnit),
	tableMachines:       plain[api.Machine](recMachine),
	tableRelations:      plain[api.Relation](recRelation),
	tableRelationScopes: plain[api.RelationScope](recRelationScope),
	tableRelationData:   plain[api.RelationData](recRelationData),
	tableLeases:         plain[api.Lease](recLease),
	tableTasks:          plain[api.Task](recTask),
	tableStatusHistory:  plain[api.StatusHistoryEntry](recStatusHistory),
	tableUnitState:      plain[UnitCharmState](recUnitState),
	tableModelConfig:    plain[ModelConfigEntry](recModelConfig),
	tableLeaderSettings: plain[LeaderSettings](recLeaderSettings),
	tableHubTrust:       plain[HubTrustRecord](recHubTrust),
	tableHubTokens:      plain[HubToken](recHubToken),
}

// unmarshal decodes numbers in untyped maps as json.Number, as Decode does,
// so a restored store encodes to the same bytes as the original.
func unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// WriteSnapshot streams every object of snap to w.
func WriteSnapshot(snap *Snapshot, w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := bw.WriteByte(snapshotVersion); err != nil {
		return err
	}
	var lenBuf [binary.MaxVarintLen64]byte
	for _, name := range allTables {
		st, ok := snapshotTables[name]
		if !ok {
			return internalf("table %q has no snapshot support", name)
		}
		it, err := snap.txn.Get(name, "id")
		if err != nil {
			return internalf("snapshot %s: %v", name, err)
		}
		for obj := it.Next(); obj != nil; obj = it.Next() {
			data, err := json.Marshal(st.encode(obj))
			if err != nil {
				return fmt.Errorf("snapshot %s: %w", name, err)
			}
			n := binary.PutUvarint(lenBuf[:], uint64(len(data)))
			if err := bw.WriteByte(byte(st.rec)); err != nil {
				return err
			}
			if _, err := bw.Write(lenBuf[:n]); err != nil {
				return err
			}
			if _, err := bw.Write(data); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// readSnapshot builds a new database from a snapshot stream.
func readSnapshot(r io.Reader) (*memdb.MemDB, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state schema: %w", err)
	}
	byRec := map[recordType]string{}
	for name, st := range snapshotTables {
		byRec[st.rec] = name
	}
	br := bufio.NewReader(r)
	v, err := br.ReadByte()
	if err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	if v != snapshotVersion {
		return nil, fmt.Errorf("snapshot version %d not supported", v)
	}
	txn := db.Txn(true)
	defer txn.Abort()
	for {
		rt, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot record: %w", err)
		}
		name, ok := byRec[recordType(rt)]
		if !ok {
			return nil, fmt.Errorf("snapshot record type %d unknown", rt)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s record length: %w", name, err)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, fmt.Errorf("snapshot %s record: %w", name, err)
		}
		obj, err := snapshotTables[name].decode(data)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s record: %w", name, err)
		}
		if err := txn.Insert(name, obj); err != nil {
			return nil, fmt.Errorf("snapshot %s insert: %w", name, err)
		}
	}
	txn.Commit()
	return db, nil
}

// Restore replaces the whole store with a snapshot stream, atomically:
// readers see the old contents until the new ones are complete. Blocking
// queries wake up.
func (s *Store) Restore(r io.Reader) error {
	db, err := readSnapshot(r)
	if err != nil {
		return err
	}
	s.replace(db)
	return nil
}
