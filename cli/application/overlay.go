package application

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// mergeOverlays applies overlay bundles to a bundle document as Juju
// does: an application an overlay names is merged into the bundle's (maps
// key by key, recursively; any other value replaced), an application with
// no value is removed together with the relations that name it, relations
// are appended, machines merged like applications, and other top-level
// keys replaced.
func mergeOverlays(base []byte, overlayFiles []string) ([]byte, error) {
	if len(overlayFiles) == 0 {
		return base, nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	for _, f := range overlayFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--overlay: %w", err)
		}
		var ov map[string]any
		if err := yaml.Unmarshal(data, &ov); err != nil {
			return nil, fmt.Errorf("--overlay %s: %w", f, err)
		}
		if err := applyOverlay(doc, ov); err != nil {
			return nil, fmt.Errorf("--overlay %s: %w", f, err)
		}
	}
	return yaml.Marshal(doc)
}

func applyOverlay(doc, ov map[string]any) error {
	for key, v := range ov {
		switch key {
		case "applications", "machines":
			items, ok := v.(map[string]any)
			if !ok && v != nil {
				return fmt.Errorf("%s must be a map", key)
			}
			cur, _ := doc[key].(map[string]any)
			if cur == nil {
				cur = map[string]any{}
			}
			for name, item := range items {
				if item == nil {
					delete(cur, name)
					if key == "applications" {
						doc["relations"] = dropRelations(doc["relations"], name)
					}
					continue
				}
				cur[name] = mergeValue(cur[name], item)
			}
			doc[key] = cur
		case "relations":
			rels, ok := v.([]any)
			if !ok && v != nil {
				return fmt.Errorf("relations must be a list")
			}
			cur, _ := doc["relations"].([]any)
			doc["relations"] = append(cur, rels...)
		default:
			doc[key] = v
		}
	}
	return nil
}

// mergeValue merges maps key by key; anything else is replaced.
func mergeValue(cur, next any) any {
	cm, ok1 := cur.(map[string]any)
	nm, ok2 := next.(map[string]any)
	if !ok1 || !ok2 {
		return next
	}
	for k, v := range nm {
		cm[k] = mergeValue(cm[k], v)
	}
	return cm
}

// dropRelations removes the relations that name application app.
func dropRelations(v any, app string) any {
	rels, ok := v.([]any)
	if !ok {
		return v
	}
	out := []any{}
	for _, r := range rels {
		pair, _ := r.([]any)
		keep := true
		for _, ep := range pair {
			s, _ := ep.(string)
			if s == app || (len(s) > len(app) && s[:len(app)+1] == app+":") {
				keep = false
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}
