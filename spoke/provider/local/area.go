package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// A machine's directory belongs to its user, who may put anything in it:
// a symlink or a FIFO where the provisioner writes agent.pid, or a hard
// link where it appends agent.log. The provisioner, as root, therefore
// never follows a symlink, opens a FIFO, or writes to a file with other
// names in a machine's directory: files are written to a fresh temporary
// name (O_EXCL|O_NOFOLLOW) and renamed into place, and read only when
// they are regular files.

// agentBinDir is the directory in Dir holding the copy of drover-agent that
// machine users run: the controller's own may be in a directory they
// cannot reach. It is not a model's directory (removeOrphans).
const agentBinDir = ".agent"

// ensureArea makes the machine's directory and returns its user (nil in
// shared mode). As root: the user exists, Dir and Dir/<model> are
// root-owned 0755, and the directory is the user's with mode 0700. A
// machine elsewhere (another controller's Dir) is not made: its directory
// must exist, owned by its user (ensureForeignArea).
func (p *Provisioner) ensureArea(pl place) (*machineUser, error) {
	if !pl.own {
		return p.ensureForeignArea(pl)
	}
	model, id, dir := pl.model, pl.id, pl.dir
	if !p.isolated {
		return nil, os.MkdirAll(dir, 0o700)
	}
	modelDir := filepath.Dir(dir)
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		return nil, err
	}
	// Dir itself is made here, with the first machine (New checked the
	// path to it), and may have gone with the last (removeEmptyDirs).
	for _, d := range []string{p.cfg.Dir, modelDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
	}
	u, err := ensureUser(p.userName(model, id), dir, "drover machine "+id+" of model "+model)
	if err != nil {
		return nil, err
	}
	p.users[model+"/"+id] = u
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory", dir)
	case int(st.Uid) == u.uid:
	case st.Uid == 0 && isEmptyDir(dir):
		// Made just now: hand it over.
		if err := os.Lchown(dir, u.uid, u.gid); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s is owned by uid %d, not by the machine's user %s (%d): it was provisioned "+
			"by a controller not running as root; remove the machine and add a new one", dir, st.Uid, u.name, u.uid)
	}
	return u, os.Chmod(dir, 0o700)
}

// ensureForeignArea checks a machine's directory in another controller's
// Dir and returns its user (nil in shared mode): the controller that made
// it made its user too.
func (p *Provisioner) ensureForeignArea(pl place) (*machineUser, error) {
	fi, err := os.Lstat(pl.dir)
	if err != nil {
		return nil, fmt.Errorf("machine %s of model %s lives in %s: %w", pl.id, pl.model, pl.dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", pl.dir)
	}
	if !p.isolated {
		return nil, nil
	}
	// Dir holds the agent's copy (agentBinary) machine users run.
	if err := os.MkdirAll(p.cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(p.cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	u, err := ownerUser(pl.dir)
	if err == nil && u == nil {
		err = fmt.Errorf("%s: %w", pl.dir, os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	p.users[pl.key()] = u
	return u, nil
}

func isEmptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
}

// userName is the machine's user (UserName of this controller).
func (p *Provisioner) userName(model, id string) string {
	return UserName(p.cfg.ControllerUUID, model, id)
}

// knownUser is the machine's user if it exists (nil in shared mode or
// when there is none).
func (p *Provisioner) knownUser(pl place) *machineUser {
	if !p.isolated {
		return nil
	}
	if u := p.users[pl.key()]; u != nil {
		return u
	}
	var u *machineUser
	var err error
	if pl.own {
		u, err = lookupUser(p.userName(pl.model, pl.id), pl.dir)
	} else {
		u, err = ownerUser(pl.dir)
	}
	if err != nil || u == nil {
		return nil
	}
	p.users[pl.key()] = u
	return u
}

// removeArea deletes the machine's directory and, as root, ends its user's
// processes and deletes the user: UserName of this controller for its own
// machines, the directory's owner (or, once the directory is gone, the
// machine user whose home it was) for a machine elsewhere.
func (p *Provisioner) removeArea(pl place) error {
	if p.isolated {
		delete(p.users, pl.key())
		name := p.userName(pl.model, pl.id)
		if !pl.own {
			u, err := ownerUser(pl.dir)
			switch {
			case errors.Is(err, errNoMachineUser):
				name = "" // not a machine user's: no user to remove
			case err != nil:
				return err
			case u != nil:
				name = u.name
			default:
				name = userWithHome(pl.dir)
			}
		}
		if name != "" {
			if err := removeUser(name, pl.dir, p.cfg.StopGrace); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(pl.dir)
}

// writeOwned replaces path with data (mode 0600), owned by u (nil: by the
// controller's user), without following a link planted at path or at its
// temporary name.
func writeOwned(path string, data []byte, u *machineUser) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && u != nil {
		err = f.Chown(u.uid, u.gid)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// openLog opens path to append to (creating it, mode 0600, owned by u),
// refusing a link or anything but a regular file with one name.
func openLog(path string, u *machineUser) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || fi.Sys().(*syscall.Stat_t).Nlink != 1) {
		err = fmt.Errorf("%s is not a regular file with one name", path)
	}
	if err == nil && u != nil {
		err = f.Chown(u.uid, u.gid)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readSmall reads up to 4 KiB of a regular file, without following a link
// or blocking on a FIFO.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, 4096))
}

// agentBinary is the drover-agent to start: as root, a root-owned 0755
// copy in Dir/.agent, refreshed when the controller's changes (size or
// modification time), which machine users can reach and cannot replace.
func (p *Provisioner) agentBinary() (string, error) {
	if !p.isolated {
		return p.cfg.AgentBinary, nil
	}
	src, err := os.Stat(p.cfg.AgentBinary)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(p.cfg.Dir, agentBinDir)
	dst := filepath.Join(dir, filepath.Base(p.cfg.AgentBinary))
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == src.Size() && fi.ModTime().Equal(src.ModTime()) {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(p.cfg.AgentBinary)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	os.Remove(tmp)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o755)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Chtimes(tmp, src.ModTime(), src.ModTime())
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return dst, nil
}

// agentEnv is a machine user's agent's environment: the controller's would
// hand it whatever the controller was started with.
func agentEnv(u *machineUser, dir string) []string {
	env := []string{"HOME=" + dir, "USER=" + u.name, "LOGNAME=" + u.name,
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, k := range []string{"LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
