package sourcehash

import (
	"slices"
	"testing"
	"testing/fstest"
)

func TestFilesAreTheBuildsInputs(t *testing.T) {
	fsys := fstest.MapFS{
		"package.json": {}, "package-lock.json": {}, "index.html": {}, "vite.config.ts": {}, "tsconfig.json": {},
		"tsconfig.node.json": {}, "src/main.tsx": {}, "src/views/a.tsx": {}, "public/robots.txt": {},
		"scripts/clean.mjs": {}, "node_modules/x/index.js": {}, "dist/index.html": {}, "README.md": {}, "doc.go": {},
	}
	got, err := Files(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"index.html", "package-lock.json", "package.json", "public/robots.txt", "scripts/clean.mjs", "src/main.tsx",
		"src/views/a.tsx", "tsconfig.json", "tsconfig.node.json", "vite.config.ts"}
	if !slices.Equal(got, want) {
		t.Errorf("Files: %q, want %q", got, want)
	}
}

// TestHashChangesWithAnyInput: content, names and the split between files
// all count.
func TestHashChangesWithAnyInput(t *testing.T) {
	hash := func(fsys fstest.MapFS) string {
		t.Helper()
		h, err := Hash(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash(fstest.MapFS{"src/a.ts": {Data: []byte("ab")}, "src/b.ts": {Data: []byte("c")}})
	for name, fsys := range map[string]fstest.MapFS{
		"content": {"src/a.ts": {Data: []byte("ab")}, "src/b.ts": {Data: []byte("d")}},
		"split":   {"src/a.ts": {Data: []byte("a")}, "src/b.ts": {Data: []byte("bc")}},
		"rename":  {"src/a.ts": {Data: []byte("ab")}, "src/c.ts": {Data: []byte("c")}},
		"added":   {"src/a.ts": {Data: []byte("ab")}, "src/b.ts": {Data: []byte("c")}, "package.json": {}},
	} {
		if hash(fsys) == base {
			t.Errorf("%s: the hash did not change", name)
		}
	}
	if hash(fstest.MapFS{"src/a.ts": {Data: []byte("ab")}, "src/b.ts": {Data: []byte("c")}, "node_modules/z.js": {}}) != base {
		t.Error("a file outside the sources changed the hash")
	}
}
