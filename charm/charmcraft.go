package charm

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// CharmcraftFile is the authoring-time project file. The agent never reads
// it; Drover accepts unpacked source charms by splitting it the way
// `charmcraft pack` does (CHARM-CONTRACT §1.1).
const CharmcraftFile = "charmcraft.yaml"

// ManifestFile is written by charmcraft and lists the bases a charm supports.
const ManifestFile = "manifest.yaml"

// isCharmcraftOnlyKey reports keys accepted in charmcraft.yaml that are
// not metadata.
func isCharmcraftOnlyKey(key string) bool {
	switch key {
	case "type", "bases", "base", "build-base", "platforms", "parts", "charm-libs",
		"links", "title", "config", "actions", "analysis", "charmhub", "extensions", "license":
		return true
	}
	return false
}

// linkKey maps charmcraft's links.* to the metadata.yaml key pack writes.
func linkKey(key string) (string, bool) {
	switch key {
	case "documentation":
		return "docs", true
	case "contact":
		return "maintainers", true
	case "issues", "source", "website":
		return key, true
	}
	return "", false
}

// charmcraftProject is charmcraft.yaml split into the three generated files.
type charmcraftProject struct {
	meta    map[string]any
	config  any
	actions any
	// hasConfig and hasActions record whether the keys were present, since
	// `config:` with a null value must still be reported as an empty file.
	hasConfig, hasActions bool
}

// parseCharmcraft splits charmcraft.yaml. With strict false (the charm also
// has metadata.yaml, so charmcraft.yaml only supplies config and actions)
// unknown keys are tolerated: a packed legacy charm may carry a
// charmcraft.yaml written for a newer charmcraft, and its metadata is not
// taken from there anyway.
func parseCharmcraft(data []byte, strict bool) (*charmcraftProject, error) {
	v, err := decodeYAML(CharmcraftFile, data)
	if err != nil {
		return nil, err
	}
	p := &problems{file: CharmcraftFile}
	top, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, invalid(CharmcraftFile, "", "empty document")
		}
		return nil, invalid(CharmcraftFile, "", "must be a map, not %s", typeName(v))
	}
	if t, ok := top["type"]; ok && t != "charm" {
		p.add("type", "must be charm, not %v", t)
	}
	proj := &charmcraftProject{meta: map[string]any{}}
	for _, k := range sortedKeys(top) {
		switch {
		case isMetaKey(k):
			proj.meta[k] = top[k]
		case strict && !isCharmcraftOnlyKey(k):
			p.add(k, "unknown key")
		}
	}
	if t, ok := top["title"]; ok {
		proj.meta["display-name"] = t
	}
	if links, ok := getMap(p, "links", top["links"]); ok {
		for _, k := range sortedKeys(links) {
			mk, known := linkKey(k)
			if !known {
				if strict {
					p.add(join("links", k), "unknown key")
				}
				continue
			}
			if _, dup := proj.meta[mk]; !dup {
				proj.meta[mk] = links[k]
			}
		}
	}
	proj.config, proj.hasConfig = top["config"]
	proj.actions, proj.hasActions = top["actions"]
	if !p.ok() {
		return nil, p.err()
	}
	return proj, nil
}

// generated renders the files charmcraft pack would write, for ArchiveDir.
func (proj *charmcraftProject) generated() (map[string][]byte, error) {
	out := map[string][]byte{}
	add := func(name string, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("rendering %s: %w", name, err)
		}
		out[name] = b
		return nil
	}
	if err := add(MetadataFile, proj.meta); err != nil {
		return nil, err
	}
	if proj.hasConfig {
		if err := add(ConfigFile, proj.config); err != nil {
			return nil, err
		}
	}
	if proj.hasActions {
		if err := add(ActionsFile, proj.actions); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Manifest is manifest.yaml. It is parsed leniently: unknown keys are
// ignored because charmcraft adds fields (versions, analysis) over time.
type Manifest struct {
	Bases []Base
}

// Base is an OS base a charm supports.
type Base struct {
	Name          string
	Channel       string
	Architectures []string
}

// ParseManifest parses manifest.yaml content.
func ParseManifest(data []byte) (*Manifest, error) {
	v, err := decodeYAML(ManifestFile, data)
	if err != nil {
		return nil, err
	}
	p := &problems{file: ManifestFile}
	top, ok := getMap(p, "", v)
	if !ok {
		return nil, p.err()
	}
	m := &Manifest{}
	if top["bases"] != nil {
		l, ok := top["bases"].([]any)
		if !ok {
			p.add("bases", "must be a list, not %s", typeName(top["bases"]))
		}
		for i, e := range l {
			f := fmt.Sprintf("bases[%d]", i)
			bm, ok := getMap(p, f, e)
			if !ok || bm == nil {
				continue
			}
			m.Bases = append(m.Bases, Base{
				Name:          getString(p, f+".name", bm["name"]),
				Channel:       channelString(p, f+".channel", bm["channel"]),
				Architectures: getStringList(p, f+".architectures", bm["architectures"]),
			})
		}
	}
	if !p.ok() {
		return nil, p.err()
	}
	return m, nil
}

// channelString accepts `channel: 22.04` written without quotes, which YAML
// decodes as a float.
func channelString(p *problems, field string, v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("%.2f", f)
	}
	return getString(p, field, v)
}
