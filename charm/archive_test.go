package charm

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree creates files under dir; a value starting with "->" is a symlink.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := fs.FileMode(0o644)
		if name == "dispatch" || strings.HasPrefix(name, "src/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func sampleCharmDir(t *testing.T) string {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"metadata.yaml": "name: kv\nsummary: a key-value store\nprovides:\n  db: kv\n",
		"config.yaml":   "options:\n  port: {type: int, default: 8080}\n",
		"actions.yaml":  "snapshot:\n  params:\n    dest: {type: string, default: /tmp}\n",
		"manifest.yaml": "analysis: {}\nbases:\n  - name: ubuntu\n    channel: 22.04\n    architectures: [amd64]\n",
		"dispatch":      "#!/bin/sh\nJUJU_DISPATCH_PATH=\"${JUJU_DISPATCH_PATH:-$0}\" PYTHONPATH=lib:venv exec ./src/charm.py\n",
		"src/charm.py":  "#!/usr/bin/env python3\n",
		"hooks/install": "->../dispatch",
		"lib/README":    "vendored libs\n",
	})
	return dir
}

func pack(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestArchiveRoundTrip(t *testing.T) {
	dir := sampleCharmDir(t)
	fromDir, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fromDir.SHA256 != "" || fromDir.Meta.Name != "kv" {
		t.Errorf("dir charm: %+v", fromDir)
	}
	data := pack(t, dir)
	if again := pack(t, dir); !bytes.Equal(data, again) {
		t.Error("ArchiveDir is not deterministic")
	}
	c, err := ReadArchiveBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Meta.Name != "kv" || c.Config.Options["port"].Default != int64(8080) || c.Actions.Specs["snapshot"] == nil {
		t.Errorf("archive charm: %+v", c)
	}
	if len(c.SHA256) != 64 || c.Size != int64(len(data)) {
		t.Errorf("sha %q size %d", c.SHA256, c.Size)
	}
	if c.Manifest == nil || c.Manifest.Bases[0].Channel != "22.04" || c.Manifest.Bases[0].Architectures[0] != "amd64" {
		t.Errorf("manifest: %+v", c.Manifest)
	}

	dest := filepath.Join(t.TempDir(), "charm")
	if err := ExpandArchive(data, dest); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dest, "dispatch"))
	if err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("dispatch not executable: %v %v", st, err)
	}
	if st, _ := os.Stat(filepath.Join(dest, "metadata.yaml")); st.Mode().Perm()&0o111 != 0 {
		t.Errorf("metadata.yaml mode %v", st.Mode())
	}
	if target, err := os.Readlink(filepath.Join(dest, "hooks/install")); err != nil || target != "../dispatch" {
		t.Errorf("hooks/install -> %q, %v", target, err)
	}
	again, err := ReadDir(dest)
	if err != nil || again.Meta.Name != "kv" {
		t.Fatalf("expanded charm: %v", err)
	}

	// Upgrading in place keeps files the charm created and replaces ours.
	writeTree(t, dest, map[string]string{".unit-state.db": "state", "src/charm.py": "old"})
	if err := ExpandArchive(data, dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, ".unit-state.db")); string(b) != "state" {
		t.Error("charm-created file lost on upgrade")
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "src/charm.py")); string(b) != "#!/usr/bin/env python3\n" {
		t.Errorf("src/charm.py not replaced: %q", b)
	}
}

func TestCharmcraftSource(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"charmcraft.yaml": `
name: kv-k8s
type: charm
title: Key Value
summary: kv on k8s
description: stores keys
base: ubuntu@22.04
platforms:
  amd64:
parts:
  charm:
    plugin: charm
links:
  documentation: https://example.com/docs
  source: https://example.com/src
containers:
  kv:
    resource: kv-image
resources:
  kv-image:
    type: oci-image
requires:
  ingress: {interface: ingress, limit: 1}
config:
  options:
    port: {type: int, default: 80}
actions:
  compact:
    description: Compact the store.
`,
		"src/charm.py": "#!/usr/bin/env python3\n",
	})
	c, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !c.FromCharmcraft || c.Meta.DisplayName != "Key Value" || c.Meta.Containers["kv"].Resource != "kv-image" {
		t.Errorf("meta %+v", c.Meta)
	}
	if c.Config.Options["port"].Default != int64(80) || c.Actions.Specs["compact"] == nil {
		t.Errorf("config/actions: %+v %+v", c.Config, c.Actions)
	}
	// The packed archive carries generated descriptor files, so the agent
	// never needs charmcraft.yaml.
	data := pack(t, dir)
	dest := t.TempDir()
	if err := ExpandArchive(data, dest); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MetadataFile, ConfigFile, ActionsFile} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("%s not generated: %v", f, err)
		}
	}
	os.Remove(filepath.Join(dest, CharmcraftFile))
	packed, err := ReadDir(dest)
	if err != nil || packed.FromCharmcraft || packed.Meta.DisplayName != "Key Value" || packed.Config.Options["port"].Default != int64(80) {
		t.Fatalf("packed charm: %+v %v", packed, err)
	}
}

func TestMetadataYAMLWinsOverCharmcraft(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"metadata.yaml": "name: legacy\n",
		// future-key is tolerated: metadata does not come from this file.
		"charmcraft.yaml": "type: charm\nfuture-key: 1\nbases: [{name: ubuntu, channel: '20.04'}]\nconfig:\n  options:\n    x: {default: y}\n",
	})
	c, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Meta.Name != "legacy" || c.FromCharmcraft || c.Config.Options["x"].Default != "y" {
		t.Errorf("got %+v", c)
	}
	// The packed charm carries a generated config.yaml for the agent.
	dest := t.TempDir()
	if err := ExpandArchive(pack(t, dir), dest); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, ConfigFile)); err != nil || !strings.Contains(string(b), "default: \"y\"") && !strings.Contains(string(b), "default: y") {
		t.Errorf("generated config.yaml: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, MetadataFile)); string(b) != "name: legacy\n" {
		t.Errorf("metadata.yaml was replaced: %q", b)
	}
}

func TestReadDirErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no metadata", map[string]string{"config.yaml": "options: {}"}, "metadata.yaml: missing"},
		{"bad config", map[string]string{"metadata.yaml": "name: a", "config.yaml": ""}, "config.yaml: empty configuration"},
		{"bad actions and meta", map[string]string{"metadata.yaml": "name: A", "actions.yaml": "juju-x: {}"}, "actions.yaml"},
		{"charmcraft bundle", map[string]string{"charmcraft.yaml": "type: bundle\nname: a"}, "must be charm"},
		{"charmcraft unknown", map[string]string{"charmcraft.yaml": "name: a\nfrobnicate: 1"}, "charmcraft.yaml: frobnicate: unknown key"},
		{"charmcraft bad config", map[string]string{"charmcraft.yaml": "name: a\nconfig:\n  options:\n    x: {type: int, default: z}"}, "charmcraft.yaml: config: options.x.default"},
		{"escaping symlink", map[string]string{"metadata.yaml": "name: a", "hooks/install": "->../../etc/passwd"}, "outside the charm"},
		{"absolute symlink", map[string]string{"metadata.yaml": "name: a", "x": "->/etc/passwd"}, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			_, err := ReadDir(dir)
			if err == nil {
				err = ArchiveDir(dir, &bytes.Buffer{})
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// zipEntry describes one member of a hand-built (possibly hostile) archive.
type zipEntry struct {
	name    string
	mode    fs.FileMode
	content string
	size    uint64 // if nonzero, overrides the declared uncompressed size
}

func buildZip(t testing.TB, entries []zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Store}
		if e.mode == 0 {
			e.mode = 0o644
		}
		hdr.SetMode(e.mode)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMaliciousArchives(t *testing.T) {
	meta := zipEntry{name: "metadata.yaml", content: "name: evil\n"}
	tests := []struct {
		name    string
		entries []zipEntry
		want    string
	}{
		{"zip slip", []zipEntry{meta, {name: "../../etc/cron.d/x", content: "x"}}, "escapes the charm"},
		{"zip slip nested", []zipEntry{meta, {name: "hooks/../../x", content: "x"}}, "escapes the charm"},
		{"absolute path", []zipEntry{meta, {name: "/etc/passwd", content: "x"}}, "absolute path"},
		{"backslash", []zipEntry{meta, {name: "..\\x", content: "x"}}, "backslash"},
		{"absolute symlink", []zipEntry{meta, {name: "hooks/install", mode: fs.ModeSymlink | 0o777, content: "/bin/sh"}}, "is absolute"},
		{"escaping symlink", []zipEntry{meta, {name: "hooks/install", mode: fs.ModeSymlink | 0o777, content: "../../x"}}, "outside the charm"},
		{"entry below symlink", []zipEntry{meta, {name: "d", mode: fs.ModeSymlink | 0o777, content: "."}, {name: "d/x", content: "x"}}, "below symlink"},
		{"entry below file", []zipEntry{meta, {name: "d", content: "x"}, {name: "d/x", content: "x"}}, "below file"},
		{"duplicate", []zipEntry{meta, {name: "a", content: "1"}, {name: "a", content: "2"}}, "duplicate entry"},
		{"device", []zipEntry{meta, {name: "dev", mode: fs.ModeDevice | 0o644}}, "unsupported file type"},
		{"no metadata", []zipEntry{{name: "README", content: "x"}}, "metadata.yaml: missing"},
		{"metadata symlink", []zipEntry{{name: "metadata.yaml", mode: fs.ModeSymlink | 0o777, content: "x"}, {name: "x", content: "name: a"}}, "not a regular file"},
		{"invalid metadata", []zipEntry{{name: "metadata.yaml", content: "name: X"}}, "invalid charm name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := buildZip(t, tt.entries)
			_, err := ReadArchiveBytes(data)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadArchive error %v, want %q", err, tt.want)
			}
			dest := t.TempDir()
			if err := ExpandArchive(data, dest); err == nil && tt.name != "invalid metadata" {
				t.Fatal("ExpandArchive accepted a hostile archive")
			}
			if _, err := ArchiveEntries(data); err == nil && tt.name != "invalid metadata" {
				t.Fatal("ArchiveEntries accepted a hostile archive")
			}
		})
	}
	if _, err := ReadArchiveBytes([]byte("not a zip")); !errors.Is(err, ErrInvalid) {
		t.Errorf("garbage: %v", err)
	}
}

func TestArchiveLimits(t *testing.T) {
	entries := []zipEntry{{name: "metadata.yaml", content: "name: big\n"}, {name: "blob", content: strings.Repeat("x", 4096)}}
	data := buildZip(t, entries)
	if _, err := ReadArchiveBytes(data); err != nil {
		t.Fatal(err)
	}
	_, err := ReadArchiveLimits(bytes.NewReader(data), int64(len(data)), Limits{MaxSize: 1000})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("size limit: %v", err)
	}
	_, err = ReadArchiveLimits(bytes.NewReader(data), int64(len(data)), Limits{MaxSize: int64(len(data)), MaxFiles: 1})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "entries") {
		t.Errorf("file limit: %v", err)
	}
	// Uncompressed size is what counts: a small archive that inflates big.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("metadata.yaml")
	w.Write([]byte("name: bomb\n"))
	w, _ = zw.Create("bomb")
	w.Write(bytes.Repeat([]byte{0}, 1<<20))
	zw.Close()
	if buf.Len() > 1<<16 {
		t.Fatalf("bomb did not compress: %d", buf.Len())
	}
	_, err = ReadArchiveLimits(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Limits{MaxSize: 1 << 16})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "uncompressed size") {
		t.Errorf("zip bomb: %v", err)
	}
	if err := ExpandArchiveLimits(buf.Bytes(), t.TempDir(), Limits{MaxSize: 1 << 16}); !errors.Is(err, ErrInvalid) {
		t.Errorf("expand zip bomb: %v", err)
	}
}

func TestExpandDoesNotFollowExistingSymlinks(t *testing.T) {
	outside := t.TempDir()
	dest := t.TempDir()
	// A previous occupant of the charm directory left a symlink pointing
	// outside; expanding must replace it, not write through it.
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dest, "dispatch")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dest, "src")); err != nil {
		t.Fatal(err)
	}
	data := buildZip(t, []zipEntry{{name: "metadata.yaml", content: "name: a\n"}, {name: "dispatch", mode: 0o755, content: "x"}, {name: "src/charm.py", content: "y"}})
	err := ExpandArchive(data, dest)
	if _, statErr := os.Stat(filepath.Join(outside, "victim")); statErr == nil {
		t.Error("wrote through a symlink to outside")
	}
	if _, statErr := os.Stat(filepath.Join(outside, "charm.py")); statErr == nil {
		t.Error("wrote into a symlinked directory outside dest")
	}
	if err == nil {
		t.Log("expansion succeeded without escaping")
	}
}

// TestArchiveEntries: the listing is what expansion puts in place, the
// directories it creates implicitly included, sorted.
func TestArchiveEntries(t *testing.T) {
	data := pack(t, sampleCharmDir(t))
	got, err := ArchiveEntries(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []ArchiveEntry{{Name: "actions.yaml"}, {Name: "config.yaml"}, {Name: "dispatch"}, {Name: "hooks", Dir: true},
		{Name: "hooks/install"}, {Name: "lib", Dir: true}, {Name: "lib/README"}, {Name: "manifest.yaml"}, {Name: "metadata.yaml"},
		{Name: "src", Dir: true}, {Name: "src/charm.py"}}
	if !slices.Equal(got, want) {
		t.Fatalf("entries\n%v\nwant\n%v", got, want)
	}
	// Every listed path exists after expansion, as the kind listed.
	dest := t.TempDir()
	if err := ExpandArchive(data, dest); err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		st, err := os.Lstat(filepath.Join(dest, e.Name))
		if err != nil || st.IsDir() != e.Dir {
			t.Errorf("%+v after expansion: %v, %v", e, st, err)
		}
	}

	// Directories the archive only implies are listed once, as are those
	// it names.
	data = buildZip(t, []zipEntry{{name: "metadata.yaml", content: "name: a\n"}, {name: "a/", mode: fs.ModeDir | 0o755},
		{name: "a/b/c", content: "x"}, {name: "l", mode: fs.ModeSymlink | 0o777, content: "a/b"}})
	got, err = ArchiveEntries(data)
	want = []ArchiveEntry{{Name: "a", Dir: true}, {Name: "a/b", Dir: true}, {Name: "a/b/c"}, {Name: "l"}, {Name: "metadata.yaml"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("entries %v, %v; want %v", got, err, want)
	}

	// Limits apply as they do to expansion.
	if _, err := ArchiveEntriesLimits(data, Limits{MaxFiles: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("file limit: %v", err)
	}
	if _, err := ArchiveEntriesLimits(data, Limits{MaxSize: 16}); !errors.Is(err, ErrInvalid) {
		t.Errorf("size limit: %v", err)
	}
}
