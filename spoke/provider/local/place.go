package local

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/droverhq/drover/api"
)

// A machine's place on the host is its directory: the Area the machine
// records (api.Machine.Area), or <Dir>/<model>/<id> for a machine that
// records none. A machine provisioned here lives in this controller's Dir;
// one that migrated from another controller of this host lives in that
// controller's Dir, where its agent and workloads keep running: this
// controller supervises it there, in place (docs/decisions/0035).
//
// As root, the user of a machine in this controller's Dir is
// UserName(ControllerUUID, model, id); the user of one elsewhere is the
// user that owns its directory, provided that user's home is the
// directory (lookupUser), since the controller that made it named it after
// itself.

// place is where one machine lives.
type place struct {
	model, id string
	dir       string // absolute
	own       bool   // dir is this controller's machineDir(model, id)
}

func (pl place) key() string  { return pl.model + "/" + pl.id }
func (pl place) conf() string { return filepath.Join(pl.dir, "agent.conf") }

// ownPlace is the machine's place in this controller's Dir.
func (p *Provisioner) ownPlace(model, id string) place {
	return place{model: model, id: id, dir: p.machineDir(model, id), own: true}
}

// placeOf is the machine's place: its recorded Area, or its own.
func (p *Provisioner) placeOf(mc *api.Machine) place {
	own := p.ownPlace(mc.ModelUUID, mc.ID)
	if mc.Area == "" || filepath.Clean(mc.Area) == own.dir {
		return own
	}
	return place{model: mc.ModelUUID, id: mc.ID, dir: filepath.Clean(mc.Area)}
}

// errNoMachineUser: a machine directory elsewhere is not owned by a
// machine user whose home it is, so no agent of it is started.
var errNoMachineUser = errors.New("not owned by a machine user whose home it is")

// ownerUser is the machine user that owns dir: the user whose uid owns it
// and whose home it is; nil and no error when dir does not exist.
func ownerUser(dir string) (*machineUser, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	uid := fi.Sys().(*syscall.Stat_t).Uid
	u, err := user.LookupId(strconv.Itoa(int(uid)))
	if err != nil {
		return nil, fmt.Errorf("%s (uid %d): %w", dir, uid, errNoMachineUser)
	}
	mu, err := lookupUser(u.Username, dir)
	if err == nil && mu == nil {
		err = fmt.Errorf("%s: user %s is gone", dir, u.Username)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", dir, errNoMachineUser, err)
	}
	return mu, nil
}

// userWithHome is the name of the machine user (a "drover-" user) whose
// home is dir in /etc/passwd, "" if none: the user of a machine elsewhere
// whose directory is already gone (a teardown that is repeated).
func userWithHome(dir string) string {
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && strings.HasPrefix(f[0], "drover-") && filepath.Clean(f[5]) == dir {
			return f[0]
		}
	}
	return ""
}
