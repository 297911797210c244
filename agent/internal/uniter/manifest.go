package uniter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/droverhq/drover/charm"
)

// charmFiles keeps the charm directory holding one charm plus whatever the
// charm created there (CHARM-CONTRACT §1.1). Expanding a new charm over the
// old one replaces the files both have, but files only the old one had
// would stay and keep running old code (a dropped dispatch or hooks/x), so
// a manifest records the paths the deployed charm put in place, as Juju's
// manifest deployer does, and the next deployment removes those the new
// charm no longer has. Anything not in a manifest is the charm's own and
// is never removed.
//
// The manifest lives in the unit's directory, outside the charm directory,
// so no charm's file can replace it and it is never one of the paths it
// lists. Only the uniter's loop uses a charmFiles.
type charmFiles struct {
	dir      string // the charm directory
	manifest string // the manifest file
	// complete caches the charm whose manifest was last read or written
	// complete, so a hook's prepare does not read the manifest each time.
	complete string
	// fault, if set (tests), is called after each step of a deployment; an
	// error stops the deployment there, as a crash would.
	fault func(step string) error
}

// charmManifest is the manifest file's content.
type charmManifest struct {
	// SHA is the charm the paths belong to; "" while a deployment is under
	// way, when the paths are the old and the new charm's together.
	SHA string `json:"sha"`
	// Paths are slash-separated and relative to the charm directory;
	// directories end in "/".
	Paths []string `json:"paths"`
}

// load reads the manifest; nil (and no error) means there is none: the
// charm was deployed by an agent that keeps no manifest, or never.
func (c *charmFiles) load() (*charmManifest, error) {
	data, err := os.ReadFile(c.manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read charm manifest: %w", err)
	}
	var m charmManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("corrupt charm manifest %s: %w", c.manifest, err)
	}
	return &m, nil
}

func (c *charmFiles) save(sha string, paths map[string]bool) error {
	m := charmManifest{SHA: sha, Paths: slices.Sorted(maps.Keys(paths))}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(c.manifest, data, 0o600); err != nil {
		return fmt.Errorf("write charm manifest: %w", err)
	}
	return nil
}

// holds reports whether charm sha is on disk in full: its deployment
// finished (a unit deployed by an agent that keeps no manifest has none
// and counts on the caller's record of what it deployed) and metadata.yaml is there.
func (c *charmFiles) holds(sha string) (bool, error) {
	if c.complete != sha {
		m, err := c.load()
		if err != nil {
			return false, err
		}
		if m != nil && m.SHA != sha {
			return false, nil
		}
		c.complete = sha
	}
	_, err := os.Stat(filepath.Join(c.dir, charm.MetadataFile))
	return err == nil, nil
}

// deploy puts charm sha (archive data) in the charm directory. Each step
// leaves a state from which running deploy again, for this charm or
// another, converges:
//
//  1. the manifest records the old and the new charm's paths together, so
//     whatever a crash leaves on disk is still known to be charm-owned;
//  2. old paths in the way of the expansion are removed: those the new
//     charm has as the other kind (a file where it wants a directory, or
//     the other way round) and those below a path it has as a file;
//  3. the new charm is expanded over the directory;
//  4. the old paths the new charm does not have are removed;
//  5. the manifest records the new charm alone.
//
// Without a manifest (the first deployment, or one by an agent that keeps
// no manifest) nothing is known to be charm-owned and nothing is removed.
func (c *charmFiles) deploy(sha string, data []byte) error {
	plan, err := c.plan(data)
	if err != nil {
		return err
	}
	c.complete = ""
	if err := c.save("", plan.both); err != nil {
		return err
	}
	if err := c.step("recorded"); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(c.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := prune(root, plan.inWay); err != nil {
		return err
	}
	if err := c.step("cleared"); err != nil {
		return err
	}
	if err := charm.ExpandArchive(data, c.dir); err != nil {
		return fmt.Errorf("expand charm: %w", err)
	}
	if err := c.step("expanded"); err != nil {
		return err
	}
	if err := prune(root, plan.stale); err != nil {
		return err
	}
	if err := c.step("pruned"); err != nil {
		return err
	}
	if err := c.save(sha, plan.next); err != nil {
		return err
	}
	c.complete = sha
	return c.step("saved")
}

// deployPlan is what one deployment records and removes. Paths are kept
// as the manifest writes them, "/" marking directories, so that one name
// can be recorded as both kinds: after a crash in the middle of a
// deployment that changed a path's kind, either may be on disk.
type deployPlan struct {
	next  map[string]bool      // the new charm's paths
	both  map[string]bool      // the old and the new charm's paths together
	inWay []charm.ArchiveEntry // old paths the expansion would trip over
	stale []charm.ArchiveEntry // old paths the new charm does not have
}

// plan compares the new charm (archive data) with the paths the manifest
// records.
func (c *charmFiles) plan(data []byte) (*deployPlan, error) {
	entries, err := charm.ArchiveEntries(data)
	if err != nil {
		return nil, fmt.Errorf("list charm archive: %w", err)
	}
	next := make(map[string]bool, len(entries))
	files := map[string]bool{} // names the new charm has as files or symlinks
	for _, e := range entries {
		next[manifestPath(e)] = true
		if !e.Dir {
			files[e.Name] = true
		}
	}
	old, err := c.ownedPaths()
	if err != nil {
		return nil, err
	}
	plan := &deployPlan{next: next, both: maps.Clone(next)}
	for p := range old {
		plan.both[p] = true
		if next[p] {
			continue
		}
		name, dir := strings.CutSuffix(p, "/")
		e := charm.ArchiveEntry{Name: name, Dir: dir}
		plan.stale = append(plan.stale, e)
		// In the way of the expansion: the new charm has the path as the
		// other kind, or a file or symlink above it.
		if next[name] || next[name+"/"] || fileAbove(files, name) {
			plan.inWay = append(plan.inWay, e)
		}
	}
	return plan, nil
}

// ownedPaths are the paths the manifest records as charm-owned; none
// without a manifest.
func (c *charmFiles) ownedPaths() (map[string]bool, error) {
	old := map[string]bool{}
	m, err := c.load()
	if err != nil || m == nil {
		return old, err
	}
	for _, p := range m.Paths {
		if name, _ := strings.CutSuffix(p, "/"); !charmPath(name) {
			return nil, fmt.Errorf("corrupt charm manifest %s: path %q", c.manifest, p)
		}
		old[p] = true
	}
	return old, nil
}

func (c *charmFiles) step(name string) error {
	if c.fault == nil {
		return nil
	}
	return c.fault(name)
}

// manifestPath is how the manifest records e.
func manifestPath(e charm.ArchiveEntry) string {
	if e.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func fileAbove(files map[string]bool, name string) bool {
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if files[dir] {
			return true
		}
	}
	return false
}

// charmPath reports whether name is a clean path inside the charm
// directory, as every path ArchiveEntries lists is.
func charmPath(name string) bool {
	return name != "" && name != "." && !path.IsAbs(name) && path.Clean(name) == name &&
		name != ".." && !strings.HasPrefix(name, "../")
}

// prune removes charm-owned paths: files and symlinks, and directories
// once they are empty (a directory still holding something holds what the
// charm created), children before their parents. A path is left alone
// when it is no longer what a charm put there: missing, of another kind,
// or below something that is no longer a real directory, because going
// through a symlink there would reach another path. The os.Root keeps
// every removal inside the charm directory whatever it holds.
func prune(root *os.Root, entries []charm.ArchiveEntry) error {
	entries = append([]charm.ArchiveEntry(nil), entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name > entries[j].Name })
	for _, e := range entries {
		ok, err := realParents(root, e.Name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		st, err := root.Lstat(e.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("remove old charm file %s: %w", e.Name, err)
		}
		if st.IsDir() != e.Dir {
			continue
		}
		if e.Dir {
			empty, err := emptyDir(root, e.Name)
			if err != nil {
				return fmt.Errorf("remove old charm directory %s: %w", e.Name, err)
			}
			if !empty {
				continue
			}
		}
		if err := root.Remove(e.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old charm file %s: %w", e.Name, err)
		}
	}
	return nil
}

// realParents reports whether every directory above name is a real
// directory, not a symlink (os.Root would follow one).
func realParents(root *os.Root, name string) (bool, error) {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		st, err := root.Lstat(strings.Join(parts[:i], "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("remove old charm file %s: %w", name, err)
		}
		if !st.IsDir() {
			return false, nil
		}
	}
	return true, nil
}

func emptyDir(root *os.Root, name string) (bool, error) {
	f, err := root.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}
