package tables

import (
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/format"
)

// A model export is a snapshot stream of one model: a
// format.ModelExportHeader record, the model's record, the records of the
// charms its applications use, then its rows of each table of ModelTables
// in that order, each table in primary-key order, so the same model at
// the same index always gives the same bytes (and the same digest).

// ModelTables are the tables whose rows belong to one model, in export
// order. A new model-scoped table must be listed here
// (TestModelTablesCoverTheSchema), or a migration would leave its rows
// behind.
var ModelTables = []string{
	Credentials, Applications, Units, Machines, Relations, RelationScopes, RelationData,
	Leases, Tasks, StatusHistory, UnitState, LeaderSettings, ModelConfig, Resources,
}

// ModelRows are the rows of one model read from an export, by table,
// each table in the export's order.
type ModelRows struct {
	Header format.ModelExportHeader
	Model  *api.Model
	Charms []*api.Charm
	Rows   map[string][]any
}

// WriteModel streams model's rows as txn sees them to w as a model export
// with header (whose ModelUUID must be model). A model txn does not hold
// gives api.CodeNotFound.
func WriteModel(txn *memdb.Txn, header format.ModelExportHeader, w io.Writer) error {
	model := header.ModelUUID
	m, err := txn.First(Models, "id", model)
	if err != nil {
		return internalf("export %s: %v", model, err)
	}
	if m == nil {
		return api.Errorf(api.CodeNotFound, "model %q not found", model)
	}
	sw, err := format.NewSnapshotWriter(w)
	if err != nil {
		return err
	}
	write := func(table string, obj any) error {
		rec, v, _ := Record(table, obj)
		if err := sw.Write(rec, v); err != nil {
			return fmt.Errorf("export %s: %w", table, err)
		}
		return nil
	}
	if err := sw.Write(format.RecExportHeader, header); err != nil {
		return err
	}
	if err := write(Models, m); err != nil {
		return err
	}
	charms, err := modelCharms(txn, model)
	if err != nil {
		return err
	}
	for _, c := range charms {
		if err := write(Charms, c); err != nil {
			return err
		}
	}
	for _, table := range ModelTables {
		index, args := "model", []any{model}
		if table == ModelConfig {
			index, args = "id_prefix", []any{model, ""}
		}
		it, err := txn.Get(table, index, args...)
		if err != nil {
			return internalf("export %s: %v", table, err)
		}
		for obj := it.Next(); obj != nil; obj = it.Next() {
			if err := write(table, obj); err != nil {
				return err
			}
		}
	}
	return sw.Flush()
}

// modelCharms are the charms model's applications use, in hash order.
func modelCharms(txn *memdb.Txn, model string) ([]any, error) {
	used := map[string]bool{}
	it, err := txn.Get(Applications, "model", model)
	if err != nil {
		return nil, internalf("export charms: %v", err)
	}
	for obj := it.Next(); obj != nil; obj = it.Next() {
		used[obj.(*api.Application).CharmSHA256] = true
	}
	var out []any
	all, err := txn.Get(Charms, "id")
	if err != nil {
		return nil, internalf("export charms: %v", err)
	}
	for obj := all.Next(); obj != nil; obj = all.Next() {
		if used[obj.(*api.Charm).SHA256] {
			out = append(out, obj)
		}
	}
	return out, nil
}

// ErrBadExport marks an export that cannot be read: it is corrupt, of a
// version this controller does not know, or holds rows of another model.
var ErrBadExport = errors.New("bad model export")

// ReadModel reads a model export. It checks what does not need a store:
// the header comes first and is of a known version, the model record
// follows it and is the header's model, every row belongs to that model,
// and only charm and model-table records appear, each at most once.
func ReadModel(r io.Reader) (*ModelRows, error) {
	sr, err := format.NewSnapshotReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadExport, err)
	}
	bad := func(f string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadExport, fmt.Sprintf(f, args...))
	}
	schema := Schema()
	tableOf := map[format.RecordType]string{}
	for _, name := range ModelTables {
		tableOf[snapshotTables[name].rec] = name
	}
	out := &ModelRows{Rows: map[string][]any{}}
	seen := map[string]bool{}
	for n := 0; ; n++ {
		rt, data, err := sr.Next()
		if errors.Is(err, io.EOF) {
			if out.Model == nil {
				return nil, bad("no model record")
			}
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadExport, err)
		}
		switch {
		case n == 0:
			if rt != format.RecExportHeader {
				return nil, bad("record %d where the header belongs", rt)
			}
			if err := unmarshal(data, &out.Header); err != nil {
				return nil, bad("header: %v", err)
			}
			if out.Header.Version < 1 || out.Header.Version > format.ModelExportVersion {
				return nil, bad("version %d (this controller reads 1 to %d)", out.Header.Version, format.ModelExportVersion)
			}
			if out.Header.ModelUUID == "" {
				return nil, bad("header names no model")
			}
			continue
		case n == 1:
			if rt != format.RecModel {
				return nil, bad("record %d where the model belongs", rt)
			}
			obj, err := snapshotTables[Models].decode(data)
			if err != nil {
				return nil, bad("model: %v", err)
			}
			out.Model = obj.(*api.Model)
			if out.Model == nil || out.Model.UUID != out.Header.ModelUUID {
				return nil, bad("the model record is not model %s", out.Header.ModelUUID)
			}
			continue
		}
		table, ok := tableOf[rt]
		if rt == format.RecCharm {
			table, ok = Charms, true
		}
		if !ok {
			return nil, bad("record type %d has no place in a model export", rt)
		}
		obj, err := snapshotTables[table].decode(data)
		if err != nil {
			return nil, bad("%s record: %v", table, err)
		}
		if obj == nil || reflect.ValueOf(obj).IsNil() {
			return nil, bad("%s record without its object", table)
		}
		key, err := rowKey(schema.Tables[table], obj)
		if err != nil {
			return nil, bad("%s record: %v", table, err)
		}
		if seen[key] {
			return nil, bad("%s record %q twice", table, key)
		}
		seen[key] = true
		if table == Charms {
			out.Charms = append(out.Charms, obj.(*api.Charm))
			continue
		}
		if m := ModelOf(obj); m != out.Header.ModelUUID {
			return nil, bad("a %s row of model %q in the export of %s", table, m, out.Header.ModelUUID)
		}
		out.Rows[table] = append(out.Rows[table], obj)
	}
}

// rowKey is obj's primary key in table (whose schema is ts), with the
// table's name: what makes two records the same row.
func rowKey(ts *memdb.TableSchema, obj any) (string, error) {
	ix, ok := ts.Indexes["id"].Indexer.(memdb.SingleIndexer)
	if !ok {
		return "", fmt.Errorf("table %s has no single primary key", ts.Name)
	}
	found, val, err := ix.FromObject(obj)
	if err != nil || !found {
		return "", fmt.Errorf("no primary key (%v)", err)
	}
	return ts.Name + "\x00" + string(val), nil
}

// ModelOf is the model a model-scoped row belongs to.
func ModelOf(obj any) string {
	v := reflect.ValueOf(obj).Elem()
	if f := v.FieldByName("ModelUUID"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}
