package state

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/droverhq/drover/spoke/internal/state/format"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// ExportModel writes model as snap sees it to w as a model export (package
// tables' WriteModel), stamped with the controller's UUID and the raft
// index snap reflects, and returns the export's SHA-256 in hex. The same
// model at the same index always gives the same bytes.
func ExportModel(snap *Snapshot, model, controller string, index uint64, w io.Writer) (string, error) {
	h := sha256.New()
	header := format.ModelExportHeader{Version: format.ModelExportVersion, ModelUUID: model,
		Controller: controller, Index: index}
	if err := tables.WriteModel(snap.txn, header, io.MultiWriter(w, h)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadModelExport reads and checks a model export (tables.ReadModel); a
// bad one gives an error wrapping tables.ErrBadExport.
func ReadModelExport(r io.Reader) (*tables.ModelRows, error) { return tables.ReadModel(r) }

// ModelExportVersion is the version of the exports this controller writes,
// and the newest it reads.
const ModelExportVersion = format.ModelExportVersion
