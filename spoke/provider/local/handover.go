package local

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/droverhq/drover/api"
)

// A model handed over. When a model migrates to another controller of this
// host, its machines stay where they are: their agents and the workloads
// their charms started keep running in this controller's Dir, and the
// target controller supervises them there (place.go). From the moment the
// model is a migration's source until it is gone, a root-owned marker,
// <Dir>/<model>/HandoverMarker holding the migration's ID, says so:
//
//   - once the source reaches SUCCESS (api.MigrationSuccess) its machines
//     are the target's: this provisioner neither starts, stops nor tears
//     them down, and forgets what it knew of their agents;
//   - when the model is gone from the store (the source reaps it), its
//     directory is no orphan: its machine directories are left to the
//     target, which removes each with its machine, and the marker and the
//     model's directory go once no machine directory is left;
//   - the marker is written as soon as the model is a migration's source,
//     not only at SUCCESS, so that a provisioner that did not run between
//     SUCCESS and the reap (a leadership change) still finds it;
//   - a model present and in no migration (a migration aborted, or the
//     model migrated back and activated here) drops the marker and takes
//     its machines back.

// HandoverMarker is the name of the marker in a handed-over model's
// directory. It is not a machine ID (IDs are numeric or "N/lxd/M").
const HandoverMarker = ".handed-over"

// handedOver reports whether the model belongs to the target of its
// migration: its source reached SUCCESS.
func handedOver(m *api.Model) bool {
	return m.Migration != nil && m.Migration.Role == api.MigrationSource && m.Migration.Phase == api.MigrationSuccess
}

// noteMigration writes or drops the model's handover marker.
func (p *Provisioner) noteMigration(m *api.Model) error {
	modelDir := filepath.Join(p.cfg.Dir, m.UUID)
	marker := filepath.Join(modelDir, HandoverMarker)
	switch {
	case m.Migration != nil && m.Migration.Role == api.MigrationSource:
		if fi, err := os.Lstat(modelDir); err != nil || !fi.IsDir() {
			return nil // no machine of it lives here
		}
		if strings.TrimSpace(readString(marker)) == m.Migration.ID {
			return nil
		}
		if err := writeOwned(marker, []byte(m.Migration.ID+"\n"), nil); err != nil {
			return err
		}
		p.cfg.Logger.Info("model migrating: its machine directories stay for the target", "model", m.UUID,
			"migration", m.Migration.ID)
	case m.Importing():
		// Coming back: until the import is activated, the machines are
		// the other controller's, and an aborted import leaves them to it.
	default:
		err := os.Remove(marker)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		p.cfg.Logger.Info("model not handed over: its machines are supervised here", "model", m.UUID)
	}
	return nil
}

// forget drops what the provisioner knows of a handed-over machine's
// agent, so that a model that comes back re-adopts its agents afresh, and
// the link to its area if it was adopted here (adopted.go): it is the
// target's now.
func (p *Provisioner) forget(pl place) error {
	delete(p.procs, pl.key())
	delete(p.users, pl.key())
	return p.unlinkArea(pl)
}

// hasHandoverMarker reports whether a model's directory carries the marker.
func hasHandoverMarker(modelDir string) bool {
	fi, err := os.Lstat(filepath.Join(modelDir, HandoverMarker))
	return err == nil && fi.Mode().IsRegular()
}

// removeHandedOverDir removes a handed-over model's marker and directory
// once the target removed every machine directory in it.
func (p *Provisioner) removeHandedOverDir(modelDir string) {
	removed, err := removeBareHandover(modelDir)
	if err != nil {
		p.cfg.Logger.Warn("remove a handed-over model's directory", "dir", modelDir, "err", err)
		return
	}
	if removed {
		p.cfg.Logger.Info("handed-over model's directory removed: the target removed its machines", "dir", modelDir)
	}
}

// removeBareHandover removes a handed-over model's directory that holds
// nothing but its marker and links (to the areas of machines this
// controller adopted before it handed the model on: they are the
// target's). It reports whether it did.
func removeBareHandover(modelDir string) (bool, error) {
	entries, err := os.ReadDir(modelDir)
	if err != nil {
		return false, nil
	}
	for _, e := range entries {
		if e.Name() != HandoverMarker && e.Name() != HandoverMarker+".tmp" && e.Type()&os.ModeSymlink == 0 {
			return false, nil // a machine of the target's
		}
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(modelDir, e.Name())); err != nil {
			return false, err
		}
	}
	if err := os.Remove(modelDir); err != nil {
		return false, err
	}
	return true, nil
}
