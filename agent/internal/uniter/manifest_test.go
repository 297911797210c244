package uniter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/charm"
)

// packTree packs a charm from files; a value starting with "->" is a
// symlink, a name ending in "/" an empty directory.
func packTree(t *testing.T, files map[string]string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	files["metadata.yaml"] = "name: app\nsummary: s\ndescription: d\n"
	writeFiles(t, dir, files)
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:])
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// tree lists dir: files as "name=content", symlinks as "name->target",
// directories as "name/".
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"->"+target)
		case d.IsDir():
			out = append(out, rel+"/")
		case rel != "metadata.yaml":
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"="+string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newFiles(t *testing.T) *charmFiles {
	unit := t.TempDir()
	return &charmFiles{dir: filepath.Join(unit, "charm"), manifest: filepath.Join(unit, "charm-manifest.json")}
}

func deploy(t *testing.T, c *charmFiles, files map[string]string) string {
	t.Helper()
	data, sha := packTree(t, files)
	if err := c.deploy(sha, data); err != nil {
		t.Fatal(err)
	}
	return sha
}

func wantTree(t *testing.T, dir string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := tree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("charm directory\n%q\nwant\n%q", got, want)
	}
}

func TestCharmFilesUpgrade(t *testing.T) {
	c := newFiles(t)
	deploy(t, c, map[string]string{"dispatch": "1", "both": "1", "hooks/install": "->../dispatch", "hooks/stop": "->../dispatch",
		"lib/a/x.py": "1", "lib/b/y.py": "1", "data/": ""})
	// What the charm creates: at the top, in a charm directory, in one the
	// new charm drops.
	writeFiles(t, c.dir, map[string]string{".unit-state.db": "s", "lib/a/cache": "s", "data/db": "s"})
	sha := deploy(t, c, map[string]string{"both": "2", "hooks/install": "2", "src/charm.py": "2"})
	wantTree(t, c.dir, ".unit-state.db=s", "both=2", "hooks/", "hooks/install=2", "src/", "src/charm.py=2",
		"lib/", "lib/a/", "lib/a/cache=s", "data/", "data/db=s")
	if ok, err := c.holds(sha); !ok || err != nil {
		t.Fatalf("holds(new) = %v, %v", ok, err)
	}
	if ok, _ := (&charmFiles{dir: c.dir, manifest: c.manifest}).holds("other"); ok {
		t.Fatal("holds a charm it does not hold")
	}
}

// TestCharmFilesKindChanges: a path the new charm has as another kind is
// cleared before the expansion, unless the charm put something of its own
// below it.
func TestCharmFilesKindChanges(t *testing.T) {
	c := newFiles(t)
	deploy(t, c, map[string]string{"venv": "->lib", "lib/x": "1", "hooks/install": "1", "f": "1"})
	deploy(t, c, map[string]string{"venv/y": "2", "lib": "->venv", "hooks": "2", "f/z": "2"})
	wantTree(t, c.dir, "venv/", "venv/y=2", "lib->venv", "hooks=2", "f/", "f/z=2")

	// A directory holding the charm's own files stays: the deployment fails
	// rather than delete them.
	writeFiles(t, c.dir, map[string]string{"venv/mine": "s"})
	data, sha := packTree(t, map[string]string{"venv": "3"})
	if err := c.deploy(sha, data); err == nil {
		t.Fatal("deployed over a directory holding the charm's own files")
	}
	if got, _ := os.ReadFile(filepath.Join(c.dir, "venv/mine")); string(got) != "s" {
		t.Fatal("the charm's own file is gone")
	}
}

// TestCharmFilesNoSymlinkFollowing: an old path below what is now a
// symlink is not reached through it, inside the charm or out.
func TestCharmFilesNoSymlinkFollowing(t *testing.T) {
	c := newFiles(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"x.py": "outside"})
	deploy(t, c, map[string]string{"lib/x.py": "1", "src/x.py": "1", "old/x.py": "1"})
	// The new charm makes lib a symlink to src, which keeps x.py; the charm
	// replaced old by a symlink out of its directory.
	if err := os.RemoveAll(filepath.Join(c.dir, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(c.dir, "old")); err != nil {
		t.Fatal(err)
	}
	deploy(t, c, map[string]string{"lib": "->src", "src/x.py": "2"})
	wantTree(t, c.dir, "lib->src", "src/", "src/x.py=2", "old->"+outside)
	if got, _ := os.ReadFile(filepath.Join(outside, "x.py")); string(got) != "outside" {
		t.Fatal("removed a file outside the charm directory")
	}
}

// TestCharmFilesLegacyUnit: a charm deployed without a manifest is recorded
// at its next deployment, with nothing removed; the one after that removes
// what it no longer has.
func TestCharmFilesLegacyUnit(t *testing.T) {
	c := newFiles(t)
	v1, _ := packTree(t, map[string]string{"a": "1", "b": "1"})
	if err := charm.ExpandArchive(v1, c.dir); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.holds("v1"); !ok || err != nil {
		t.Fatalf("a legacy unit's charm counts as on disk: %v, %v", ok, err)
	}
	deploy(t, c, map[string]string{"b": "2", "c": "2"})
	wantTree(t, c.dir, "a=1", "b=2", "c=2")
	deploy(t, c, map[string]string{"d": "3"})
	wantTree(t, c.dir, "a=1", "d=3")
}

// TestCharmFilesInterruptedThenRedirected: a deployment killed at any step
// and then replaced by another charm's removes what both the old and the
// interrupted charm had.
func TestCharmFilesInterruptedThenRedirected(t *testing.T) {
	for _, step := range []string{"recorded", "cleared", "expanded", "pruned"} {
		t.Run(step, func(t *testing.T) {
			c := newFiles(t)
			sha1 := deploy(t, c, map[string]string{"v1": "1", "all": "1", "x": "1"})
			v2, sha2 := packTree(t, map[string]string{"v2": "2", "all": "2", "x/": ""})
			c.fault = func(s string) error {
				if s == step {
					return errors.New("killed")
				}
				return nil
			}
			if err := c.deploy(sha2, v2); err == nil {
				t.Fatal("no fault")
			}
			c.fault = nil
			for _, sha := range []string{sha1, sha2} {
				if ok, _ := c.holds(sha); ok {
					t.Fatalf("an interrupted deployment holds %s", sha)
				}
			}
			deploy(t, c, map[string]string{"v3": "3", "all": "3"})
			wantTree(t, c.dir, "v3=3", "all=3")
		})
	}
}

func TestCharmFilesCorruptManifest(t *testing.T) {
	c := newFiles(t)
	deploy(t, c, map[string]string{"a": "1"})
	data, sha := packTree(t, map[string]string{"b": "2"})
	for _, bad := range []string{`{"sha":"x","paths":["../escape"]}`, `{"sha":"x","paths":["/etc/passwd"]}`, `not json`} {
		if err := os.WriteFile(c.manifest, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := c.deploy(sha, data); err == nil {
			t.Fatalf("deployed with manifest %s", bad)
		}
	}
}
