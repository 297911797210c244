package hooktools

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	appPattern  = `[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*`
	validApp    = regexp.MustCompile(`^` + appPattern + `$`)
	validUnit   = regexp.MustCompile(`^(` + appPattern + `)/(?:0|[1-9][0-9]*)$`)
	validKeySeg = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
)

// parseKeyValues is juju/utils keyvalues.Parse with duplicates disallowed.
func parseKeyValues(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("expected \"key=value\", got %q", a)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("key %q specified more than once", k)
		}
		out[k] = v
	}
	return out, nil
}

// parseStringMap reads a YAML (or JSON) map of strings, as --file takes it.
// Scalars of other types are kept as their text; null is "".
func parseStringMap(data []byte) (map[string]string, error) {
	out := map[string]string{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
