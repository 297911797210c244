package state

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/format"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// The export fixture is a model export written by a released controller.
// Every later controller must read it: migrations from a controller of that
// release stay possible. Never regenerate it to make a change pass; add a
// fixture for a new export version beside it.
var updateExport = flag.Bool("update-export", false, "write testdata/model-export-v1.bin")

const exportFixture = "testdata/model-export-v1.bin"

const otherModel = "model-uuid-2"

// exportHarness is fillAll plus a second model with rows in the same
// tables, which an export of testModel must leave out.
func exportHarness(t *testing.T) *harness {
	h := newHarness(t)
	fillAll(h)
	h.must(AddModelType, &AddModelRequest{UUID: otherModel, Name: "other", Owner: "admin", Now: t0})
	h.must(AddApplicationType, &AddApplicationRequest{ModelUUID: otherModel, Name: "kv", CharmSHA256: sha("kv"), NumUnits: 1, Now: t0})
	h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: otherModel, Set: map[string]any{"n": 9}})
	h.must(SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "unit-kv-0-other", ModelUUID: otherModel, Hash: "h2"}})
	return h
}

func exportOf(t *testing.T, h *harness, model string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := ExportModel(h.snap(), model, "c1", h.index, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), sum
}

// TestModelExportHoldsTheModelAndNothingElse: an export holds every row of
// its model in every model table, the charms its applications use, and no
// row of another model; the same state exports to the same bytes.
func TestModelExportHoldsTheModelAndNothingElse(t *testing.T) {
	h := exportHarness(t)
	data, sum := exportOf(t, h, testModel)
	again, sum2 := exportOf(t, h, testModel)
	if !bytes.Equal(data, again) || sum != sum2 || len(sum) != 64 {
		t.Fatal("two exports of one model at one index differ")
	}
	rows, err := ReadModelExport(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if rows.Header != (format.ModelExportHeader{Version: format.ModelExportVersion, ModelUUID: testModel, Controller: "c1", Index: h.index}) {
		t.Errorf("header %+v", rows.Header)
	}
	if rows.Model.Name != "m" || len(rows.Charms) != 3 {
		t.Errorf("model %+v with %d charms, want m with kv, web and logger", rows.Model, len(rows.Charms))
	}
	txn := h.snap().txn
	for _, table := range tables.ModelTables {
		index, args := "model", []any{testModel}
		if table == tables.ModelConfig {
			index, args = "id_prefix", []any{testModel, ""}
		}
		it, err := txn.Get(table, index, args...)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for obj := it.Next(); obj != nil; obj = it.Next() {
			want++
		}
		if want == 0 {
			t.Errorf("fillAll leaves %s empty for the model: extend it", table)
		}
		if got := len(rows.Rows[table]); got != want {
			t.Errorf("%s: %d rows exported, the model has %d", table, got, want)
		}
	}
	if _, err := ExportModel(h.snap(), "no-such-model", "c1", h.index, &bytes.Buffer{}); api.CodeOf(err) != api.CodeNotFound {
		t.Errorf("export of an unknown model: %v", err)
	}
}

// TestModelTablesCoverTheSchema: every table with rows of a model is
// exported with it, so a new model-scoped table cannot be left behind by a
// migration.
func TestModelTablesCoverTheSchema(t *testing.T) {
	for name, ts := range tables.Schema().Tables {
		_, scoped := ts.Indexes["model"]
		if name == tables.ModelConfig || name == tables.StatusRevisions {
			scoped = name == tables.ModelConfig
		}
		if scoped != slices.Contains(tables.ModelTables, name) {
			t.Errorf("table %s: model-scoped %v, in ModelTables %v", name, scoped, !scoped)
		}
	}
}

// TestReadModelRefusesBadExports: what ReadModel refuses, each with
// ErrBadExport.
func TestReadModelRefusesBadExports(t *testing.T) {
	h := exportHarness(t)
	good, _ := exportOf(t, h, testModel)
	other, _ := exportOf(t, h, otherModel)
	rec := func(rt format.RecordType, v any) []byte {
		var b bytes.Buffer
		w, _ := format.NewSnapshotWriter(&b)
		if err := w.Write(rt, v); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		return b.Bytes()[1:]
	}
	header := func(v int, model string) []byte {
		return append([]byte{format.SnapshotVersion}, rec(format.RecExportHeader, format.ModelExportHeader{Version: v, ModelUUID: model})...)
	}
	model, _ := h.snap().ModelByUUID(testModel)
	foreign, _ := h.snap().ModelByUUID(otherModel)
	otherRows, _ := ReadModelExport(bytes.NewReader(other))
	foreignApp := otherRows.Rows[tables.Applications][0]
	for name, data := range map[string][]byte{
		"empty":              nil,
		"truncated":          good[:len(good)-3],
		"no header":          append([]byte{format.SnapshotVersion}, rec(format.RecModel, format.FromModel(model))...),
		"future version":     slices.Concat(header(format.ModelExportVersion+1, testModel), rec(format.RecModel, format.FromModel(model))),
		"no model record":    header(1, testModel),
		"another model":      slices.Concat(header(1, testModel), rec(format.RecModel, format.FromModel(foreign))),
		"a foreign row":      slices.Concat(good, rec(format.RecApplication, format.FromApplication(foreignApp.(*api.Application)))),
		"a row twice":        slices.Concat(good, rec(format.RecModelConfig, &format.ModelConfigEntry{ModelUUID: testModel, Key: "n", Value: 3})),
		"a controller table": slices.Concat(good, rec(format.RecJoinToken, &format.JoinToken{Hash: "x"})),
	} {
		if _, err := ReadModelExport(bytes.NewReader(data)); !errors.Is(err, tables.ErrBadExport) {
			t.Errorf("%s: %v, want ErrBadExport", name, err)
		}
	}
}

// TestModelExportFixture reads the export a released controller wrote.
func TestModelExportFixture(t *testing.T) {
	if *updateExport {
		h := exportHarness(t)
		data, _ := exportOf(t, h, testModel)
		if err := os.WriteFile(exportFixture, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.FromSlash(exportFixture))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadModelExport(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the v1 fixture no longer reads: %v", err)
	}
	if rows.Header.Version != 1 || rows.Model.UUID != testModel || len(rows.Rows[tables.Units]) == 0 ||
		len(rows.Rows[tables.RelationData]) == 0 || len(rows.Rows[tables.Leases]) == 0 {
		t.Fatalf("the v1 fixture reads as %+v", rows.Header)
	}
}

func FuzzReadModelExport(f *testing.F) {
	h := exportHarness(&testing.T{})
	good, _ := exportOf(&testing.T{}, h, testModel)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{format.SnapshotVersion, byte(format.RecExportHeader), 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ReadModelExport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, tables.ErrBadExport) {
				t.Fatalf("an error that is not ErrBadExport: %v", err)
			}
			return
		}
		for table, rs := range rows.Rows {
			for _, r := range rs {
				if tables.ModelOf(r) != rows.Header.ModelUUID {
					t.Fatalf("a %s row of another model was accepted", table)
				}
			}
		}
	})
}
