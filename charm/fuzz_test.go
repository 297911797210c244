package charm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// checkErr asserts the package's error contract on fuzz outputs: any
// failure on bad content must match ErrInvalid.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrInvalid) {
		t.Fatalf("error does not match ErrInvalid: %v", err)
	}
}

func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		data, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzParseMeta(f *testing.F) {
	addFiles(f, "postgresql-metadata.yaml", "sidecar-metadata.yaml", "subordinate-metadata.yaml")
	f.Add([]byte("name: a\nstorage:\n  d: {type: block, multiple: {range: 1-}, minimum-size: 1Y}"))
	f.Add([]byte("name: a\nassumes: [{any-of: [{all-of: [juju]}]}]"))
	f.Add([]byte("name: a\n? [x]\n: 1\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMeta(data)
		checkErr(t, err)
		if err == nil {
			seen := map[string]bool{}
			for _, ep := range m.Endpoints() {
				if seen[ep.Name] {
					t.Fatalf("duplicate endpoint %q", ep.Name)
				}
				seen[ep.Name] = true
			}
			if !seen[JujuInfo] {
				t.Fatal("juju-info missing")
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte("options:"))
	f.Add([]byte("options:\n  a: {type: int, default: 9223372036854775808}"))
	f.Add([]byte("options:\n  1: {type: float, default: 1e400}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		checkErr(t, err)
		if err == nil {
			// Defaults must survive their own validation.
			_, err := c.ValidateSettings(map[string]any(c.DefaultSettings()))
			if err != nil {
				t.Fatalf("defaults do not validate: %v", err)
			}
		}
	})
}

func FuzzParseActions(f *testing.F) {
	f.Add([]byte(sampleActions), []byte("label: x\ncompression: {level: 3}"))
	f.Add([]byte("a:\n  params:\n    x: {type: array, items: {type: object, properties: {y: {default: 1}}}}"), []byte("x: [{}]"))
	f.Add([]byte("a: {additionalProperties: {type: integer}}"), []byte("b: 2"))
	f.Fuzz(func(t *testing.T, spec, params []byte) {
		a, err := ParseActions(spec)
		checkErr(t, err)
		if err != nil {
			return
		}
		v, err := decodeYAML("params", params)
		if err != nil {
			return
		}
		pm, _ := v.(map[string]any)
		for _, name := range a.Names() {
			_, err := a.Validate(name, pm)
			checkErr(t, err)
		}
	})
}

func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(sampleBundle))
	f.Add([]byte("applications:\n  a: {charm: a, num_units: 1, to: ['lxd:0']}\nmachines: {0: {}}"))
	f.Add([]byte("applications:\n  a: {charm: a}\nrelations: [[a, [b]]]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBundle(data)
		checkErr(t, err)
		if err == nil {
			for _, a := range b.Applications {
				if len(a.Placements) > a.NumUnits {
					t.Fatal("more placements than units")
				}
			}
		}
	})
}

func FuzzReadArchive(f *testing.F) {
	f.Add(buildZip(f, []zipEntry{{name: "metadata.yaml", content: "name: a\n"}, {name: "hooks/install", mode: fs.ModeSymlink | 0o777, content: "../dispatch"}, {name: "dispatch", mode: 0o755, content: "#!/bin/sh"}}))
	f.Add(buildZip(f, []zipEntry{{name: "metadata.yaml", content: "name: a\n"}, {name: "../x", content: "x"}}))
	f.Add(buildZip(f, []zipEntry{{name: "charmcraft.yaml", content: "name: a\nconfig: {options: {}}\n"}}))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadArchiveBytes(data)
		checkErr(t, err)
		if err != nil || c.Meta == nil {
			return
		}
		// Whatever ReadArchive accepts must expand without escaping, and
		// expansion puts in place exactly what ArchiveEntries lists.
		dest := t.TempDir()
		if err := ExpandArchive(data, dest); err != nil {
			checkErr(t, err)
			return
		}
		entries, err := ArchiveEntries(data)
		if err != nil {
			t.Fatalf("expanded, but cannot be listed: %v", err)
		}
		for _, e := range entries {
			if st, err := os.Lstat(filepath.Join(dest, e.Name)); err != nil || st.IsDir() != e.Dir {
				t.Fatalf("listed %+v, on disk %v, %v", e, st, err)
			}
		}
	})
}

func FuzzParseSettings(f *testing.F) {
	f.Add("port", "80")
	f.Add("ratio", "1e309")
	f.Add("debug", "T")
	f.Add("password", "secret:")
	f.Add("name", "")
	f.Fuzz(func(t *testing.T, key, value string) {
		c, err := ParseConfig([]byte(sampleConfig))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.ParseSettings(map[string]string{key: value})
		checkErr(t, err)
		if err != nil {
			return
		}
		// A parsed setting must also pass typed validation unchanged.
		s2, err := c.ValidateSettings(map[string]any(s))
		if err != nil {
			t.Fatalf("parsed %q=%q to %#v, which does not validate: %v", key, value, s[key], err)
		}
		if v := s2[key]; v != s[key] && !(value == "" && v == nil) {
			t.Fatalf("round trip changed %#v to %#v", s[key], v)
		}
	})
}
