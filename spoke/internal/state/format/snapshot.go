package format

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Snapshot stream: one version byte, then per object one record: a
// record-type byte, a uvarint length and the object as JSON. Package state
// writes the records table by table, each table in primary-key order, so
// the same state always gives the same bytes.
const SnapshotVersion = 1

// RecordType numbers a snapshot record: which table its object belongs
// to. Record types are permanent, like MessageType: never renumber them.
type RecordType uint8

// Record types.
const (
	RecIndex          RecordType = 1
	RecController     RecordType = 2
	RecControllerNode RecordType = 3
	RecUser           RecordType = 4
	RecCredential     RecordType = 5
	RecModel          RecordType = 6
	RecCharm          RecordType = 7
	RecApplication    RecordType = 8
	RecUnit           RecordType = 9
	RecMachine        RecordType = 10
	RecRelation       RecordType = 11
	RecRelationScope  RecordType = 12
	RecRelationData   RecordType = 13
	RecLease          RecordType = 14
	RecTask           RecordType = 15
	RecStatusHistory  RecordType = 16
	RecUnitState      RecordType = 17
	RecLeaderSettings RecordType = 18
	RecModelConfig    RecordType = 19
	RecHubTrust       RecordType = 20
	RecHubToken       RecordType = 21
	RecJoinToken      RecordType = 22
	RecResource       RecordType = 23
	RecTombstone      RecordType = 25
)

// SnapshotWriter writes a snapshot stream.
type SnapshotWriter struct {
	bw     *bufio.Writer
	lenBuf [binary.MaxVarintLen64]byte
}

// NewSnapshotWriter starts a snapshot stream on w with its version byte.
func NewSnapshotWriter(w io.Writer) (*SnapshotWriter, error) {
	bw := bufio.NewWriter(w)
	if err := bw.WriteByte(SnapshotVersion); err != nil {
		return nil, err
	}
	return &SnapshotWriter{bw: bw}, nil
}

// Write appends one record holding v as JSON.
func (s *SnapshotWriter) Write(rec RecordType, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	n := binary.PutUvarint(s.lenBuf[:], uint64(len(data)))
	if err := s.bw.WriteByte(byte(rec)); err != nil {
		return err
	}
	if _, err := s.bw.Write(s.lenBuf[:n]); err != nil {
		return err
	}
	_, err = s.bw.Write(data)
	return err
}

// Flush writes out what is buffered.
func (s *SnapshotWriter) Flush() error { return s.bw.Flush() }

// SnapshotReader reads a snapshot stream.
type SnapshotReader struct {
	br *bufio.Reader
}

// NewSnapshotReader checks the version byte of a snapshot stream.
func NewSnapshotReader(r io.Reader) (*SnapshotReader, error) {
	br := bufio.NewReader(r)
	v, err := br.ReadByte()
	if err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	if v != SnapshotVersion {
		return nil, fmt.Errorf("snapshot version %d not supported", v)
	}
	return &SnapshotReader{br: br}, nil
}

// Next returns the next record's type and JSON, and io.EOF after the last.
func (s *SnapshotReader) Next() (RecordType, []byte, error) {
	rt, err := s.br.ReadByte()
	if errors.Is(err, io.EOF) {
		return 0, nil, io.EOF
	}
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot record: %w", err)
	}
	n, err := binary.ReadUvarint(s.br)
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot record %d length: %w", rt, err)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(s.br, data); err != nil {
		return 0, nil, fmt.Errorf("snapshot record %d: %w", rt, err)
	}
	return RecordType(rt), data, nil
}

// RecExportHeader opens a model export (ModelExportHeader); it never
// appears in a snapshot.
const RecExportHeader RecordType = 24

// ModelExportVersion is the version of the model description a model
// export carries (ModelExportHeader.Version). A controller imports exports
// of its own version and older ones; a change that an older importer
// would misread takes the next version.
const ModelExportVersion = 1

// ModelExportHeader opens a model export: which model, from which
// controller, as of which raft index. The records after it are the
// model's rows in snapshot record form (see package tables' WriteModel).
type ModelExportHeader struct {
	Version    int    `json:"version"`
	ModelUUID  string `json:"model-uuid"`
	Controller string `json:"controller"`
	Index      uint64 `json:"index"`
}
