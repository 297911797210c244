package pgserver

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// AccessError means the user the server runs as cannot enter a directory
// the server needs: Blocked, a parent of Dir (or Dir itself), is not
// traversable by that user.
type AccessError struct {
	Dir, Blocked, User string
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("PostgreSQL runs as user %s (it refuses to run as root), who cannot enter %s, so it cannot use %s: "+
		"make %s traversable (chmod o+x %s), or choose a directory under one the %s user can enter, such as /var/lib/drover",
		e.User, e.Blocked, e.Dir, e.Blocked, e.Blocked, e.User)
}

// CheckAccess returns an *AccessError when the user the server runs as
// cannot enter dir, which must exist: without it a server started on dir
// fails only after its start timeout, with a permission error in its log.
// As any other user than root, the server runs as that user and the check
// passes.
func CheckAccess(dir string) error {
	pg, err := findInstall()
	if err != nil {
		return err
	}
	return pg.checkAccess(dir)
}

// checkAccess runs the server binary as the server's user in dir (the
// kernel then answers with the user's real rights: groups, ACLs), and on
// a refusal finds the first directory from the root down that the user
// cannot enter.
func (pg *pgInstall) checkAccess(dir string) error {
	if pg.cred == nil {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := pg.enter(abs); err == nil || !errors.Is(err, syscall.EACCES) {
		return err
	}
	var path []string
	for p := abs; ; p = filepath.Dir(p) {
		path = append(path, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	blocked := abs
	for i := len(path) - 1; i >= 0; i-- {
		if err := pg.enter(path[i]); errors.Is(err, syscall.EACCES) {
			blocked = path[i]
			break
		}
	}
	name := strconv.Itoa(pg.uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return &AccessError{Dir: abs, Blocked: blocked, User: name}
}

// enter runs `postgres --version` as the server's user with dir as its
// working directory: the child changes into dir after taking that user's
// identity, so a directory the user cannot enter fails the start.
func (pg *pgInstall) enter(dir string) error {
	cmd := pg.command("postgres", "--version")
	cmd.Dir = dir
	return cmd.Run()
}
