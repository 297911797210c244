package authz_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/authz"
)

// modelTestFile is the subset of the `fga model test` file format that
// model_test.fga.yaml uses: global tuples plus per-test tuples, check and
// list_objects assertions. Unknown fields are an error, so a feature added
// to the YAML but not to this runner cannot pass silently.
type modelTestFile struct {
	Name      string        `yaml:"name"`
	ModelFile string        `yaml:"model_file"`
	Tuples    []authz.Tuple `yaml:"tuples"`
	Tests     []modelTest   `yaml:"tests"`
}

type modelTest struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Tuples      []authz.Tuple `yaml:"tuples"`
	Check       []checkCase   `yaml:"check"`
	ListObjects []listCase    `yaml:"list_objects"`
}

type checkCase struct {
	User       string                  `yaml:"user"`
	Object     string                  `yaml:"object"`
	Assertions map[authz.Relation]bool `yaml:"assertions"`
}

type listCase struct {
	User       string                      `yaml:"user"`
	Type       string                      `yaml:"type"`
	Assertions map[authz.Relation][]string `yaml:"assertions"`
}

func loadModelTests(t *testing.T) modelTestFile {
	t.Helper()
	raw, err := os.ReadFile("model_test.fga.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f modelTestFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("model_test.fga.yaml: %v", err)
	}
	if f.ModelFile != "./model.fga" {
		t.Fatalf("model_file = %q, want ./model.fga (the embedded model)", f.ModelFile)
	}
	if len(f.Tests) == 0 {
		t.Fatal("model_test.fga.yaml has no tests")
	}
	return f
}

// TestModelFile runs every assertion of model_test.fga.yaml against the
// embedded OpenFGA server, one fresh store per test.
func TestModelFile(t *testing.T) {
	f := loadModelTests(t)
	for _, mt := range f.Tests {
		t.Run(mt.Name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			c := newClient(t)
			tuples := append(slices.Clone(f.Tuples), mt.Tuples...)
			if err := c.Write(ctx, tuples, nil); err != nil {
				t.Fatalf("write fixture: %v", err)
			}
			if len(mt.Check)+len(mt.ListObjects) == 0 {
				t.Fatal("test has no assertions")
			}
			for _, cc := range mt.Check {
				for _, rel := range sortedKeys(cc.Assertions) {
					want := cc.Assertions[rel]
					got, err := c.Check(ctx, cc.User, rel, cc.Object)
					if err != nil {
						t.Errorf("check %s %s %s: %v", cc.User, rel, cc.Object, err)
						continue
					}
					if got != want {
						t.Errorf("check %s %s %s = %v, want %v", cc.User, rel, cc.Object, got, want)
					}
				}
			}
			for _, lc := range mt.ListObjects {
				for _, rel := range sortedKeys(lc.Assertions) {
					want := slices.Sorted(slices.Values(lc.Assertions[rel]))
					got, err := c.ListObjects(ctx, lc.User, rel, lc.Type)
					if err != nil {
						t.Errorf("list_objects %s %s %s: %v", lc.User, rel, lc.Type, err)
						continue
					}
					if !slices.Equal(got, want) && len(got)+len(want) > 0 {
						t.Errorf("list_objects %s %s %s = %v, want %v", lc.User, rel, lc.Type, got, want)
					}
				}
			}
		})
	}
}

func sortedKeys[V any](m map[authz.Relation]V) []authz.Relation {
	keys := make([]authz.Relation, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestModelJSON checks the DSL-to-JSON transform without a server: every
// type of model.fga is present and the schema is 1.1.
func TestModelJSON(t *testing.T) {
	raw, err := authz.ModelJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		SchemaVersion   string `json:"schema_version"`
		TypeDefinitions []struct {
			Type      string                     `json:"type"`
			Relations map[string]json.RawMessage `json:"relations"`
		} `json:"type_definitions"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != "1.1" {
		t.Errorf("schema_version = %q, want 1.1", m.SchemaVersion)
	}
	var types []string
	for _, td := range m.TypeDefinitions {
		types = append(types, td.Type)
	}
	want := []string{
		authz.TypeUser, authz.TypeGroup, authz.TypeHub, authz.TypeOrganization,
		authz.TypeController, authz.TypeModel, authz.TypeApplicationOffer,
	}
	if !slices.Equal(types, want) {
		t.Errorf("types = %v, want %v", types, want)
	}
}

// TestReadmeDocumentsEveryRelation keeps README.md in step with model.fga.
func TestReadmeDocumentsEveryRelation(t *testing.T) {
	raw, err := authz.ModelJSON()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		TypeDefinitions []struct {
			Type      string                     `json:"type"`
			Relations map[string]json.RawMessage `json:"relations"`
		} `json:"type_definitions"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, td := range m.TypeDefinitions {
		for rel := range td.Relations {
			if !strings.Contains(string(readme), "`"+td.Type+"#"+rel+"`") {
				t.Errorf("README.md does not document `%s#%s`", td.Type, rel)
			}
		}
	}
}
