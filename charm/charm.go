package charm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// maxYAMLSize bounds each descriptor file read, whatever the archive limit.
const maxYAMLSize = 8 << 20

// Charm is a loaded, validated charm.
type Charm struct {
	Meta *Meta
	// Config and Actions are never nil; they are empty when the charm has
	// no config.yaml or actions.yaml.
	Config  *Config
	Actions *Actions
	// Manifest is nil when the charm has no manifest.yaml.
	Manifest *Manifest
	// FromCharmcraft is true when the metadata came from charmcraft.yaml,
	// i.e. the charm is an unpacked source charm.
	FromCharmcraft bool
	// SHA256 is the hex digest of the archive bytes, the charm's content
	// address. It is empty for charms read from a directory.
	SHA256 string
	// Size is the archive size in bytes; 0 for directories.
	Size int64
}

// fileReader returns a descriptor file's content, or ok=false when absent.
type fileReader func(name string) (data []byte, ok bool, err error)

// load builds a Charm from the descriptor files, applying charmcraft's
// precedence: metadata.yaml wins over charmcraft.yaml for metadata, and
// config.yaml/actions.yaml win over charmcraft.yaml's config/actions keys.
func load(read fileReader) (*Charm, error) {
	files := map[string][]byte{}
	for _, name := range []string{MetadataFile, CharmcraftFile, ConfigFile, ActionsFile, ManifestFile} {
		data, ok, err := read(name)
		if err != nil {
			return nil, err
		}
		if ok {
			files[name] = data
		}
	}
	p := &problems{}
	c := &Charm{}
	var proj *charmcraftProject
	if data, ok := files[CharmcraftFile]; ok {
		_, hasMeta := files[MetadataFile]
		var err error
		if proj, err = parseCharmcraft(data, !hasMeta); err != nil {
			return nil, err
		}
	}
	var err error
	switch data, ok := files[MetadataFile]; {
	case ok:
		c.Meta, err = ParseMeta(data)
	case proj != nil:
		c.FromCharmcraft = true
		c.Meta, err = metaFromValue(CharmcraftFile, proj.meta)
	default:
		err = invalid(MetadataFile, "", "missing (and no charmcraft.yaml to generate it from)")
	}
	p.merge(err)

	c.Config, c.Actions = &Config{Options: map[string]Option{}}, &Actions{Specs: map[string]*ActionSpec{}}
	if data, ok := files[ConfigFile]; ok {
		cfg, err := ParseConfig(data)
		p.merge(err)
		if err == nil {
			c.Config = cfg
		}
	} else if proj != nil && proj.hasConfig {
		cfg, err := configFromValue(CharmcraftFile+": config", proj.config)
		p.merge(err)
		if err == nil {
			c.Config = cfg
		}
	}
	if data, ok := files[ActionsFile]; ok {
		a, err := ParseActions(data)
		p.merge(err)
		if err == nil {
			c.Actions = a
		}
	} else if proj != nil && proj.hasActions {
		a, err := actionsFromValue(CharmcraftFile+": actions", proj.actions)
		p.merge(err)
		if err == nil {
			c.Actions = a
		}
	}
	if data, ok := files[ManifestFile]; ok {
		m, err := ParseManifest(data)
		p.merge(err)
		c.Manifest = m
	}
	if !p.ok() {
		return nil, p.err()
	}
	return c, nil
}

// ReadDir loads a charm from an unpacked directory: a built charm or a
// charmcraft source tree.
func ReadDir(dir string) (*Charm, error) {
	return load(func(name string) ([]byte, bool, error) {
		return readLimited(filepath.Join(dir, name), name)
	})
}

func readLimited(path, name string) ([]byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, false, err
	} else if !st.Mode().IsRegular() {
		return nil, false, invalid(name, "", "not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxYAMLSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxYAMLSize {
		return nil, false, invalid(name, "", "larger than %d bytes", maxYAMLSize)
	}
	return data, true, nil
}

// ReadArchiveBytes loads a charm from .charm archive bytes.
func ReadArchiveBytes(data []byte) (*Charm, error) {
	return ReadArchive(bytes.NewReader(data), int64(len(data)))
}
