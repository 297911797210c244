// Package clientstore is the client store: what drover remembers between
// invocations about controllers, hubs, models and accounts, in Juju's
// controllers.yaml, models.yaml and accounts.yaml shapes.
package clientstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// The client store lives in one directory (DROVER_DATA, default
// ~/.local/share/drover) as YAML files: controllers, models and accounts
// like Juju's, and indexes (the last raft index each controller answered
// with). Every file is written atomically (temp file, fsync,
// rename) with mode 0600, under an exclusive lock so that two drover
// processes never lose each other's updates.
const (
	controllersFile = "controllers.yaml"
	modelsFile      = "models.yaml"
	accountsFile    = "accounts.yaml"
	indexesFile     = "indexes.yaml"
	lockFile        = ".lock"
)

// ControllerDetails is what the client knows about a controller.
type ControllerDetails struct {
	UUID         string   `yaml:"uuid" json:"uuid"`
	APIAddresses []string `yaml:"api-endpoints" json:"api-endpoints"`
	CACert       string   `yaml:"ca-cert" json:"ca-cert"`
	// DataDir and PID are set for a controller bootstrapped from this
	// machine: its first node's data dir and process.
	DataDir string `yaml:"data-dir,omitempty" json:"data-dir,omitempty"`
	PID     int    `yaml:"pid,omitempty" json:"pid,omitempty"`
	// Cached from the last contact, for `drover controllers`.
	Version   string `yaml:"agent-version,omitempty" json:"agent-version,omitempty"`
	NodeCount int    `yaml:"controller-machine-count,omitempty" json:"controller-machine-count,omitempty"`
	// Hub is set for a hub (drover login HUB) rather than a controller.
	Hub bool `yaml:"hub,omitempty" json:"hub,omitempty"`
}

// ModelDetails is a model the client has seen.
type ModelDetails struct {
	UUID  string `yaml:"uuid" json:"uuid"`
	Owner string `yaml:"owner,omitempty" json:"owner,omitempty"`
}

// ControllerModels are the models known on one controller.
type ControllerModels struct {
	Models       map[string]ModelDetails `yaml:"models,omitempty"`
	CurrentModel string                  `yaml:"current-model,omitempty"`
}

// Account is the credential used on one controller.
type Account struct {
	User     string `yaml:"user"`
	Password string `yaml:"password,omitempty"`
	Access   string `yaml:"last-known-access,omitempty"`
	// A hub session (drover login HUB): the access token, and what renews
	// it (a refresh token, or a service account's client credentials).
	Token        string `yaml:"token,omitempty"`
	RefreshToken string `yaml:"refresh-token,omitempty"`
	ClientID     string `yaml:"client-id,omitempty"`
	ClientSecret string `yaml:"client-secret,omitempty"`
	// Store saves a renewed session; set when the account was loaded or
	// logged in. It is not part of the file.
	Store *Store `yaml:"-"`
}

// State is the whole client store in memory.
type State struct {
	Controllers       map[string]*ControllerDetails `yaml:"controllers"`
	CurrentController string                        `yaml:"current-controller,omitempty"`
	Models            map[string]*ControllerModels  `yaml:"-"`
	Accounts          map[string]*Account           `yaml:"-"`
}

type modelsDoc struct {
	Controllers map[string]*ControllerModels `yaml:"controllers"`
}

type accountsDoc struct {
	Controllers map[string]*Account `yaml:"controllers"`
}

// ControllerNames returns the known controllers, sorted.
func (s *State) ControllerNames() []string {
	names := make([]string, 0, len(s.Controllers))
	for n := range s.Controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ModelsOf returns (creating) the model list of a controller.
func (s *State) ModelsOf(controller string) *ControllerModels {
	cm := s.Models[controller]
	if cm == nil {
		cm = &ControllerModels{}
		s.Models[controller] = cm
	}
	if cm.Models == nil {
		cm.Models = map[string]ModelDetails{}
	}
	return cm
}

// RemoveController forgets a controller, its models and its account.
func (s *State) RemoveController(name string) {
	delete(s.Controllers, name)
	delete(s.Models, name)
	delete(s.Accounts, name)
	if s.CurrentController == name {
		s.CurrentController = ""
		if names := s.ControllerNames(); len(names) > 0 {
			s.CurrentController = names[0]
		}
	}
}

// Store reads and writes the client store directory.
type Store struct {
	Dir string
}

// DefaultStoreDir is DROVER_DATA, else $XDG_DATA_HOME/drover, else
// ~/.local/share/drover.
func DefaultStoreDir(getenv func(string) string) (string, error) {
	if d := getenv("DROVER_DATA"); d != "" {
		return d, nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "drover"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find the home directory for the client store; set DROVER_DATA: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "drover"), nil
}

// Load reads the store; missing files are an empty store.
func (st *Store) Load() (*State, error) {
	s, err := st.load()
	if err == nil {
		for _, acct := range s.Accounts {
			if acct != nil {
				acct.Store = st
			}
		}
	}
	return s, err
}

func (st *Store) load() (*State, error) {
	s := &State{Controllers: map[string]*ControllerDetails{}, Models: map[string]*ControllerModels{}, Accounts: map[string]*Account{}}
	if err := readYAML(filepath.Join(st.Dir, controllersFile), s); err != nil {
		return nil, err
	}
	var md modelsDoc
	if err := readYAML(filepath.Join(st.Dir, modelsFile), &md); err != nil {
		return nil, err
	}
	var ad accountsDoc
	if err := readYAML(filepath.Join(st.Dir, accountsFile), &ad); err != nil {
		return nil, err
	}
	if s.Controllers == nil {
		s.Controllers = map[string]*ControllerDetails{}
	}
	if md.Controllers != nil {
		s.Models = md.Controllers
	}
	if ad.Controllers != nil {
		s.Accounts = ad.Controllers
	}
	return s, nil
}

// Update loads the store under an exclusive lock, lets fn change it, and
// writes it back unless fn fails.
func (st *Store) Update(fn func(*State) error) error {
	return st.locked(func() error {
		s, err := st.Load()
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
		return st.save(s)
	})
}

// locked runs fn under the store's exclusive lock.
func (st *Store) locked(fn func() error) error {
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the client store %s: %w", st.Dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(st.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("cannot lock the client store: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("cannot lock the client store: %w", err)
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too
	return fn()
}

// indexesDoc is indexes.yaml: the highest raft index each controller
// (by UUID) has answered this client with. Every read sends it, so no
// node serves the client state older than what it wrote or saw, in this
// invocation or an earlier one (read-your-writes, ADR 0028). It is keyed
// by UUID, not name: a controller bootstrapped again under an old name
// starts from nothing.
type indexesDoc struct {
	Controllers map[string]uint64 `yaml:"controllers"`
}

// LastIndex is the highest raft index controller uuid has answered with
// (0: none known).
func (st *Store) LastIndex(uuid string) (uint64, error) {
	var d indexesDoc
	if err := readYAML(filepath.Join(st.Dir, indexesFile), &d); err != nil {
		return 0, err
	}
	return d.Controllers[uuid], nil
}

// Indexes is every controller's last index, by UUID: what a hub client
// starts with, not knowing yet which controllers its models are on.
func (st *Store) Indexes() (map[string]uint64, error) {
	var d indexesDoc
	if err := readYAML(filepath.Join(st.Dir, indexesFile), &d); err != nil {
		return nil, err
	}
	return d.Controllers, nil
}

// RecordIndex raises controller uuid's last index to idx (a lower idx
// changes nothing: two drover processes may finish in any order).
func (st *Store) RecordIndex(uuid string, idx uint64) error {
	return st.RecordIndexes(map[string]uint64{uuid: idx})
}

// RecordIndexes raises each controller's last index (by UUID) as
// RecordIndex does, in one write.
func (st *Store) RecordIndexes(indexes map[string]uint64) error {
	changed := false
	for uuid, idx := range indexes {
		changed = changed || (uuid != "" && idx > 0)
	}
	if !changed {
		return nil
	}
	return st.locked(func() error {
		path := filepath.Join(st.Dir, indexesFile)
		var d indexesDoc
		if err := readYAML(path, &d); err != nil {
			return err
		}
		changed := false
		for uuid, idx := range indexes {
			if uuid == "" || d.Controllers[uuid] >= idx {
				continue
			}
			if d.Controllers == nil {
				d.Controllers = map[string]uint64{}
			}
			d.Controllers[uuid], changed = idx, true
		}
		if !changed {
			return nil
		}
		return writeYAML(path, d)
	})
}

// ForgetIndex drops what the store knows of controller uuid's index (the
// controller is gone).
func (st *Store) ForgetIndex(uuid string) error {
	return st.locked(func() error {
		path := filepath.Join(st.Dir, indexesFile)
		var d indexesDoc
		if err := readYAML(path, &d); err != nil {
			return err
		}
		if _, ok := d.Controllers[uuid]; !ok {
			return nil
		}
		delete(d.Controllers, uuid)
		return writeYAML(path, d)
	})
}

func (st *Store) save(s *State) error {
	for name, cm := range s.Models {
		if _, ok := s.Controllers[name]; !ok || cm == nil {
			delete(s.Models, name)
		}
	}
	if err := writeYAML(filepath.Join(st.Dir, controllersFile), s); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(st.Dir, modelsFile), modelsDoc{Controllers: s.Models}); err != nil {
		return err
	}
	return writeYAML(filepath.Join(st.Dir, accountsFile), accountsDoc{Controllers: s.Accounts})
}

func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the client store: %w", err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("client store file %s is corrupt (fix or remove it): %w", path, err)
	}
	return nil
}

// writeYAML replaces path atomically with v, mode 0600.
func writeYAML(path string, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write the client store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the client store: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write the client store: %w", err)
	}
	return nil
}
