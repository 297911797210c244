package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/internal/proctree"
)

// Adopted machines. A machine that migrated here from another controller
// of this host lives in that controller's Dir (place.go), out of reach of
// whatever works from this controller's Dir alone: droverd dev's Ctrl-C,
// `droverd teardown` (KillProcessesUnder, DestroyMachines). So the
// provisioner keeps <Dir>/<model>/<id> as a symlink to the machine's area
// while it supervises the machine, and removes it with the machine:
//
//   - KillProcessesUnder(dir) powers off the areas the links under dir
//     point to, and DestroyMachines(dir) destroys them (processes, the user
//     whose home the area is, the area), then the links; the other
//     controller's model directory that held the area goes too once it
//     holds nothing but its HandoverMarker;
//   - a link is followed only to an area: an absolute, clean path to a
//     directory (not a link) holding agent.conf, owned by this process's
//     user or, as root, by the machine user whose home it is; the link and
//     the model directory holding it must be this process's user's, the
//     directory not writable by others (machine users cannot write
//     there). A link that fails these checks is removed, never followed;
//   - everything else that walks Dir (orphan sweeps, boot markers, users)
//     sees a link as a link: removing it removes the link only.
//
// A machine whose ID has a slash (a container, "0/lxd/1") gets no link: its
// own directory would sit in its host machine's, which its user owns.

// linkArea keeps <Dir>/<model>/<id> a link to the area of a machine that
// lives elsewhere (idempotent). The area must pass checkArea.
func (p *Provisioner) linkArea(pl place) error {
	if pl.own || strings.Contains(pl.id, "/") {
		return nil
	}
	link := p.machineDir(pl.model, pl.id)
	if target, err := os.Readlink(link); err == nil && target == pl.dir {
		return nil
	}
	if err := checkArea(pl.dir); err != nil {
		return err
	}
	modelDir := filepath.Dir(link)
	perm := os.FileMode(0o700)
	if p.isolated {
		perm = 0o755 // machine users reach their own directories through it
	}
	if err := os.MkdirAll(modelDir, perm); err != nil {
		return err
	}
	if p.isolated {
		for _, d := range []string{p.cfg.Dir, modelDir} {
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
		}
	}
	fi, err := os.Lstat(link)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink != 0:
		if err := os.Remove(link); err != nil { // a link to elsewhere
			return err
		}
	default:
		return fmt.Errorf("%s is in the way of the link to machine %s's area %s: remove it", link, pl.id, pl.dir)
	}
	if err := os.Symlink(pl.dir, link); err != nil {
		return err
	}
	p.cfg.Logger.Info("adopted machine linked from this controller's directory", "model", pl.model, "machine", pl.id,
		"link", link, "area", pl.dir)
	return nil
}

// unlinkArea removes <Dir>/<model>/<id> if it is a link (the target stays).
func (p *Provisioner) unlinkArea(pl place) error {
	link := p.machineDir(pl.model, pl.id)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// isLink reports whether path is a symlink (not following it).
func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// checkArea reports why dir may not be treated as a machine's area: it
// must be an absolute, clean path to a directory (not a link) holding
// agent.conf, owned by this process's user or, as root, by the machine
// user whose home it is.
func checkArea(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("%q is not an absolute, clean path", dir)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if conf, err := os.Lstat(filepath.Join(dir, "agent.conf")); err != nil || !conf.Mode().IsRegular() {
		return fmt.Errorf("%s holds no agent.conf: it is no machine's area", dir)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) == os.Geteuid() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Geteuid())
	}
	_, err = ownerUser(dir)
	return err
}

// checkLink reports why the link at path may not be followed: it and the
// directory holding it must be this process's user's, that directory not
// writable by group or others.
func checkLink(path string) error {
	me := uint32(os.Geteuid())
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink == 0 || fi.Sys().(*syscall.Stat_t).Uid != me {
		return fmt.Errorf("%s is not a link of uid %d", path, me)
	}
	parent, err := os.Lstat(filepath.Dir(path))
	if err != nil {
		return err
	}
	if !parent.IsDir() || parent.Sys().(*syscall.Stat_t).Uid != me || parent.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a directory of uid %d that only it can write", filepath.Dir(path), me)
	}
	return nil
}

// linkedArea is the area the link at path points to, if it may be
// followed (checkLink, checkArea); a link that may not is removed.
func linkedArea(path string) (string, bool) {
	target, err := os.Readlink(path)
	if err == nil {
		err = checkLink(path)
	}
	if err == nil {
		err = checkArea(target)
	}
	if err != nil {
		os.Remove(path)
		return "", false
	}
	return target, true
}

// adoption is a link to an adopted machine's area.
type adoption struct{ link, area string }

// adoptedUnder lists the links under dir (a controller's Dir, a model's
// directory in it, or one such link) to the areas of machines this
// controller adopted, but those in the directories spared; the links that
// may not be followed are removed.
func adoptedUnder(dir string, spared []string) []adoption {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	var out []adoption
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		if within(d, spared) {
			return
		}
		if isLink(d) {
			if area, ok := linkedArea(d); ok {
				out = append(out, adoption{link: d, area: area})
			}
			return
		}
		if depth == 2 || hasAgentConf(d) {
			return // a machine's own directory: its user may put links in it
		}
		entries, _ := os.ReadDir(d) // a missing directory holds none
		for _, e := range entries {
			if e.Name() != agentBinDir && (e.IsDir() || e.Type()&os.ModeSymlink != 0) {
				walk(filepath.Join(d, e.Name()), depth+1)
			}
		}
	}
	walk(abs, 0)
	return out
}

func hasAgentConf(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "agent.conf"))
	return err == nil
}

// killAdopted powers off the adopted areas: it returns how many processes
// are left in them, and forgets the boots of those with none left.
func killAdopted(adopted []adoption, grace time.Duration) int {
	left := 0
	for _, a := range adopted {
		n := proctree.KillUnder(a.area, grace)
		if n == 0 {
			os.Remove(filepath.Join(a.area, BootFile))
		}
		left += n
	}
	return left
}

// destroyAdopted destroys the adopted areas, powered off: the user whose
// home each is (as root), the area, its link, and the model directory that
// held the area if nothing but its HandoverMarker is left in it (the other
// controller was destroyed first, or spared it).
func destroyAdopted(adopted []adoption, grace time.Duration) error {
	var errs []error
	for _, a := range adopted {
		if os.Geteuid() == 0 {
			name := userWithHome(a.area)
			if u, err := ownerUser(a.area); err == nil && u != nil {
				name = u.name
			}
			if name != "" {
				if err := removeUser(name, a.area, grace); err != nil {
					errs = append(errs, err)
					continue
				}
			}
		}
		if err := os.RemoveAll(a.area); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(a.link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		modelDir := filepath.Dir(a.area)
		if hasHandoverMarker(modelDir) {
			if removed, err := removeBareHandover(modelDir); err != nil {
				errs = append(errs, err)
			} else if removed {
				// The other controller's Dir, if that was its last model.
				removeEmptyControllerDir(filepath.Dir(modelDir))
			}
		}
	}
	return errors.Join(errs...)
}

// removeEmptyControllerDir removes a controller's Dir that holds nothing
// but the agent's copy, and the shared default root with its last
// controller.
func removeEmptyControllerDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() != agentBinDir {
			return
		}
	}
	_ = os.RemoveAll(filepath.Join(dir, agentBinDir))
	_ = os.Remove(dir)
	if filepath.Dir(dir) == machineRoot {
		_ = os.Remove(machineRoot)
	}
}
