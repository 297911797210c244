package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Visibility describes the models a caller can read (hub/listing.go): those
// of the organizations in Orgs, those on the controllers in Controllers,
// and those on which one of Subjects (OpenFGA users: "user:<id>",
// "user:*", "group:<name>#member") holds one of Relations directly in the
// hub's expected tuples.
type Visibility struct {
	Orgs        []string
	Controllers []string // UUIDs
	Subjects    []string
	Relations   []authz.Relation
}

// args are v as the arguments of visibleModel.
func (v Visibility) args() []any {
	ctrls := make([]uuid.UUID, 0, len(v.Controllers))
	for _, c := range v.Controllers {
		if u, err := uuid.Parse(c); err == nil {
			ctrls = append(ctrls, u)
		}
	}
	rels := make([]string, len(v.Relations))
	for i, r := range v.Relations {
		rels[i] = string(r)
	}
	return []any{pgx.QueryResultFormats{pgx.BinaryFormatCode}, v.Orgs, ctrls, v.Subjects, rels}
}

// ModelRow is one model of a listing, decoded from PostgreSQL's binary
// row without allocating: its slices point into the driver's buffer and
// are valid only during the callback that receives it. Where the
// controller is (its name, cloud and region) is Controllers.Places'.
type ModelRow struct {
	UUID, ControllerUUID, Owner [16]byte
	HasOwner                    bool
	Name, Org, OwnerName        []byte
	Life, Status                []byte
	ApplicationCount, UnitCount int32
	MachineCount                int32
	EventIndex                  int64
	CreatedAt, UpdatedAt        time.Time
	// MigrationPhase is the phase of the model's latest migration (empty
	// for none).
	MigrationPhase []byte
	// Version is the row's version: every write to the row gives it a
	// new one (migrations/0007_model_versions.sql), so two reads with the
	// same Version read the same row.
	Version int64
}

// ModelKey is one model of a listing by UUID and row version
// (ModelRow.Version).
type ModelKey struct {
	UUID    [16]byte
	Version int64
}

// Visible calls each with the indexed models v describes, sorted by
// org and name in byte order, from one query, as rows arrive: a listing of
// tens of thousands is never held whole, and no row allocates.
func (s *Models) Visible(ctx context.Context, v Visibility, each func(*ModelRow) error) error {
	// The listing is read from models alone, in the order of its (org,
	// name) index, so PostgreSQL neither joins nor sorts 10,000 rows (that
	// doubled the query's time): each row carries its owner's name.
	return s.modelRows(ctx, "list models", listModels, v.args(), each)
}

// VisibleKeys appends to dst the key of every indexed model v
// describes, in Models.Visible's order. It sends two values a row where
// Models.Visible sends fifteen, and PostgreSQL's cost of a listing is
// mostly sending values (about 0.1 µs each): for 10,000 models it takes a
// third of Models.Visible's time.
func (s *Models) VisibleKeys(ctx context.Context, v Visibility, dst []ModelKey) ([]ModelKey, error) {
	rows, err := s.pool.Query(ctx, listModelKeys, v.args()...)
	if err != nil {
		return dst, pgErr("list models", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k ModelKey
		var version [8]byte
		if v := rows.RawValues(); len(v) != 2 || !fixed(v[0], k.UUID[:]) || !fixed(v[1], version[:]) {
			return dst, errRow
		}
		k.Version = int64(binary.BigEndian.Uint64(version[:]))
		dst = append(dst, k)
	}
	return dst, pgErr("list models", rows.Err())
}

// RowsByUUID calls each with those of the models ids that are
// indexed, in no particular order.
func (s *Models) RowsByUUID(ctx context.Context, ids [][16]byte, each func(*ModelRow) error) error {
	return s.modelRows(ctx, "read models", `SELECT `+listCols+` FROM models m WHERE m.uuid = ANY($1::uuid[])`,
		[]any{pgx.QueryResultFormats{pgx.BinaryFormatCode}, ids}, each)
}

// modelRows runs query, whose columns are listCols, and calls each per row.
func (s *Models) modelRows(ctx context.Context, what, query string, args []any, each func(*ModelRow) error) error {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return pgErr(what, err)
	}
	defer rows.Close()
	var m ModelRow
	for rows.Next() {
		if err := m.decode(rows.RawValues()); err != nil {
			return err
		}
		if err := each(&m); err != nil {
			return err
		}
	}
	return pgErr(what, rows.Err())
}

// listCols are the columns ModelRow.decode reads.
const listCols = `m.uuid, m.name, m.org, m.owner, m.controller_uuid, m.life, m.status,
		m.application_count, m.unit_count, m.machine_count, m.event_index, m.created_at, m.updated_at,
		m.owner_name, m.version, m.migration_phase`

// listModels is Models.Visible's query. org and name are byte-ordered (the
// "C" collation, migrations/0004_byte_order.sql), so the order is the same
// on every deployment and is still that of the (org, name) index.
const listModels = `SELECT ` + listCols + ` FROM models m WHERE ` + visibleModel + ` ORDER BY m.org, m.name`

// listModelKeys is Models.VisibleKeys's query, in listModels' order.
const listModelKeys = `SELECT m.uuid, m.version FROM models m WHERE ` + visibleModel + ` ORDER BY m.org, m.name`

// visibleModel is Models.Visible's condition on models m; its arguments are
// the organizations, the controller UUIDs, the subjects and the relations.
const visibleModel = `(m.org = ANY($1::text[]) OR m.controller_uuid = ANY($2::uuid[])
	OR m.uuid IN (SELECT substr(object, 7)::uuid FROM authz_tuples
		WHERE "user" = ANY($3::text[]) AND relation = ANY($4::text[]) AND starts_with(object, 'model:')))`

// Place is where a controller is, as a listing shows it, and the hub's
// connection to it (its health: connected, disconnected or unknown).
type Place struct{ Name, Cloud, Region, Status []byte }

// Places returns every controller's name, cloud, region and
// health by UUID (a hub has tens or hundreds of controllers).
func (s *Controllers) Places(ctx context.Context) (map[[16]byte]Place, error) {
	rows, err := s.pool.Query(ctx, `SELECT uuid, name, cloud, region, status FROM controllers`)
	if err != nil {
		return nil, pgErr("list models", err)
	}
	out := map[[16]byte]Place{}
	var id [16]byte
	var name, cloud, region, status string
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &cloud, &region, &status}, func() error {
		out[id] = Place{[]byte(name), []byte(cloud), []byte(region), []byte(status)}
		return nil
	})
	return out, pgErr("list models", err)
}

// errRow marks a listing row whose binary layout is not what the query
// asked for.
var errRow = errors.New("store: malformed model row")

// decode reads the binary columns listCols.
func (m *ModelRow) decode(v [][]byte) error {
	if len(v) != 16 {
		return fmt.Errorf("%w: %d columns", errRow, len(v))
	}
	ok := fixed(v[0], m.UUID[:]) && fixed(v[4], m.ControllerUUID[:])
	m.HasOwner = v[3] != nil
	if m.HasOwner {
		ok = ok && fixed(v[3], m.Owner[:])
	}
	m.Name, m.Org, m.Life, m.Status, m.OwnerName, m.MigrationPhase = v[1], v[2], v[5], v[6], v[13], v[15]
	var i4 [3][4]byte
	var i8 [4][8]byte
	ok = ok && fixed(v[7], i4[0][:]) && fixed(v[8], i4[1][:]) && fixed(v[9], i4[2][:]) &&
		fixed(v[10], i8[0][:]) && fixed(v[11], i8[1][:]) && fixed(v[12], i8[2][:]) && fixed(v[14], i8[3][:])
	if !ok {
		return errRow
	}
	be := binary.BigEndian
	m.ApplicationCount, m.UnitCount, m.MachineCount = int32(be.Uint32(i4[0][:])), int32(be.Uint32(i4[1][:])), int32(be.Uint32(i4[2][:]))
	m.Version = int64(be.Uint64(i8[3][:]))
	m.EventIndex = int64(be.Uint64(i8[0][:]))
	m.CreatedAt, m.UpdatedAt = pgTime(int64(be.Uint64(i8[1][:]))), pgTime(int64(be.Uint64(i8[2][:])))
	return nil
}

// fixed copies a fixed-size binary value, false when its size is wrong.
func fixed(src, dst []byte) bool {
	if len(src) != len(dst) {
		return false
	}
	copy(dst, src)
	return true
}

// pgEpoch is where PostgreSQL's binary timestamps count microseconds from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// pgTime converts a binary timestamptz, in UTC.
func pgTime(us int64) time.Time {
	return time.Unix(pgEpoch+us/1e6, (us%1e6)*1e3).UTC()
}
