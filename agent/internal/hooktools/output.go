package hooktools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// output is juju/cmd's Output: --format smart|json|yaml and -o/--output.
type output struct {
	format formatValue
	path   string
}

type formatValue struct{ p *string }

func (f formatValue) Set(s string) error {
	switch s {
	case "smart", "json", "yaml":
		*f.p = s
		return nil
	}
	return fmt.Errorf("unknown format %q", s)
}
func (f formatValue) String() string { return *f.p }

func (o *output) addFlags(fs *flagSet, def string) {
	o.format.p = new(string)
	*o.format.p = def
	fs.add(o.format, false, "Specify output format (json|smart|yaml)", "format")
	fs.stringVar(&o.path, "", "Specify an output file", "o", "output")
}

func (o *output) name() string { return *o.format.p }

func (o *output) write(e *env, v any) error {
	var data []byte
	var err error
	switch o.name() {
	case "json":
		data, err = formatJSON(v)
	case "yaml":
		data, err = formatYAML(v)
	default:
		data, err = formatSmart(v)
	}
	if err != nil {
		return err
	}
	if o.path == "" {
		e.stdout.Write(data)
		return nil
	}
	path := o.path
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.dir, path)
	}
	return os.WriteFile(path, data, 0o644)
}

func formatJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func formatYAML(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// formatSmart is juju/cmd's FormatSmart: strings raw, string lists one per
// line, booleans as True/False, nothing for nil or "", YAML otherwise.
func formatSmart(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		if rv.String() == "" {
			return nil, nil
		}
		return []byte(rv.String() + "\n"), nil
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.String {
			parts := make([]string, rv.Len())
			for i := range parts {
				parts[i] = rv.Index(i).String()
			}
			return formatSmart(strings.Join(parts, "\n"))
		}
	case reflect.Bool:
		if rv.Bool() {
			return []byte("True\n"), nil
		}
		return []byte("False\n"), nil
	}
	return formatYAML(v)
}
