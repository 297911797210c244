package status

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

func TestStatusGolden(t *testing.T) {
	fs := fixtureStatus(t)
	for _, tc := range []struct {
		name, format string
		filters      []string
		opt          statusOptions
	}{
		{"status-tabular.golden", "tabular", nil, statusOptions{}},
		{"status-tabular-color.golden", "tabular", nil, statusOptions{color: true}},
		{"status-filtered.golden", "tabular", []string{"web"}, statusOptions{}},
		{"status-json.golden", "json", nil, statusOptions{}},
		{"status-yaml.golden", "yaml", nil, statusOptions{}},
		{"status-short.golden", "short", nil, statusOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, out, _ := testCommands(t)
			if err := a.renderStatus(fs, tc.filters, tc.format, tc.opt, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			modelcmdtest.Golden(t, tc.name, out.Bytes())
		})
	}
}

// TestStatusJSONShape checks that --format json is exactly api.FullStatus:
// decoding it back gives the fixture.
func TestStatusJSONShape(t *testing.T) {
	fs := fixtureStatus(t)
	a, out, _ := testCommands(t)
	if err := a.renderStatus(fs, nil, "json", statusOptions{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var back api.FullStatus
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(fs)
	got, _ := json.Marshal(&back)
	if !bytes.Equal(got, want) {
		t.Errorf("json status round trip differs:\n%s\n%s", got, want)
	}
}

func fixtureStatus(t *testing.T) *api.FullStatus {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "status-full.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fs api.FullStatus
	if err := json.Unmarshal(data, &fs); err != nil {
		t.Fatal(err)
	}
	return &fs
}
