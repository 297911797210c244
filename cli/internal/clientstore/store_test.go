package clientstore

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAccountFileHoldsOnlyTheCredentials: the store an account was loaded
// from (which saves its renewed session) is not written into the file.
func TestAccountFileHoldsOnlyTheCredentials(t *testing.T) {
	st := &Store{Dir: t.TempDir()}
	err := st.Update(func(s *State) error {
		s.Accounts["hub"] = &Account{User: "alice", Token: "tok", Store: st}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(st.Dir, accountsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "store") || strings.Contains(string(data), st.Dir) {
		t.Errorf("accounts.yaml holds the store:\n%s", data)
	}
}

func TestStoreRoundTripAndPermissions(t *testing.T) {
	st := &Store{Dir: filepath.Join(t.TempDir(), "drover")}
	err := st.Update(func(s *State) error {
		s.Controllers["local"] = &ControllerDetails{UUID: "u-1", APIAddresses: []string{"127.0.0.1:1"}, CACert: "PEM", DataDir: "/d", PID: 42}
		s.Accounts["local"] = &Account{User: "admin", Password: "secret"}
		s.CurrentController = "local"
		cm := s.ModelsOf("local")
		cm.Models["demo"] = ModelDetails{UUID: "m-1", Owner: "admin"}
		cm.CurrentModel = "demo"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	if s.CurrentController != "local" || s.Controllers["local"].PID != 42 || s.Accounts["local"].Password != "secret" ||
		s.Models["local"].CurrentModel != "demo" || s.Models["local"].Models["demo"].UUID != "m-1" {
		t.Errorf("store round trip: %+v %+v %+v", s, s.Accounts["local"], s.Models["local"])
	}
	info, err := os.Stat(st.Dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("store dir mode %v, %v", info.Mode().Perm(), err)
	}
	for _, f := range []string{controllersFile, modelsFile, accountsFile} {
		info, err := os.Stat(filepath.Join(st.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, info.Mode().Perm())
		}
	}
	// No temporary files are left behind by the atomic writes.
	entries, _ := os.ReadDir(st.Dir)
	if len(entries) != 4 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("store files %v, want the three YAML files and the lock", names)
	}
	// Removing the controller drops its models and account too.
	if err := st.Update(func(s *State) error { s.RemoveController("local"); return nil }); err != nil {
		t.Fatal(err)
	}
	s, _ = st.Load()
	if len(s.Controllers) != 0 || len(s.Models) != 0 || len(s.Accounts) != 0 || s.CurrentController != "" {
		t.Errorf("after RemoveController: %+v", s)
	}
}

func TestStoreCorruptFileSaysWhatToDo(t *testing.T) {
	st := &Store{Dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(st.Dir, controllersFile), []byte("controllers: [oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(); err == nil {
		t.Fatal("corrupt store loaded")
	}
}

func TestDefaultStoreDir(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if d, _ := DefaultStoreDir(get); d != "/home/u/.local/share/drover" {
		t.Errorf("default %q", d)
	}
	env["XDG_DATA_HOME"] = "/x"
	if d, _ := DefaultStoreDir(get); d != "/x/drover" {
		t.Errorf("xdg %q", d)
	}
	env["DROVER_DATA"] = "/dd"
	if d, _ := DefaultStoreDir(get); d != "/dd" {
		t.Errorf("DROVER_DATA %q", d)
	}
}

// TestIndexOnlyRises: the last index kept per controller UUID only rises,
// survives other updates of the store, and is the controller's alone.
func TestIndexOnlyRises(t *testing.T) {
	st := &Store{Dir: filepath.Join(t.TempDir(), "drover")}
	for _, idx := range []uint64{7, 42, 9} {
		if err := st.RecordIndex("u-1", idx); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Update(func(s *State) error { s.CurrentController = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := st.LastIndex("u-1"); err != nil || got != 42 {
		t.Fatalf("LastIndex(u-1) = %d, %v; want 42", got, err)
	}
	if got, err := st.LastIndex("u-2"); err != nil || got != 0 {
		t.Fatalf("LastIndex(u-2) = %d, %v; want 0", got, err)
	}
	if err := st.ForgetIndex("u-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.LastIndex("u-1"); got != 0 {
		t.Fatalf("LastIndex after ForgetIndex = %d", got)
	}
	fi, err := os.Stat(filepath.Join(st.Dir, indexesFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("indexes file: %v, %v", fi, err)
	}
}

// TestIndexesOfSeveralControllers: a hub client records the indexes of
// every controller its commands reached in one write, each only rising,
// and reads them all back (Indexes), the direct connections' among them.
func TestIndexesOfSeveralControllers(t *testing.T) {
	st := &Store{Dir: filepath.Join(t.TempDir(), "drover")}
	if err := st.RecordIndex("direct", 5); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordIndexes(map[string]uint64{"a": 10, "b": 3, "direct": 4, "": 9, "zero": 0}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordIndexes(map[string]uint64{"a": 8, "b": 6}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Indexes()
	if want := map[string]uint64{"a": 10, "b": 6, "direct": 5}; err != nil || !maps.Equal(got, want) {
		t.Fatalf("Indexes() = %v, %v; want %v", got, err, want)
	}
}
