package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
)

// templateFormat changes whenever the initdb arguments change, so a cached
// data directory made with old arguments is never reused.
const templateFormat = "1"

var templateCache struct {
	once sync.Once
	dir  string
	err  error
}

// templateDataDir returns a data directory initialised by initdb, shared by
// every test binary on the machine: it lives in os.TempDir keyed by
// PostgreSQL version and user, and a file lock makes parallel test binaries
// wait for the one that runs initdb.
func templateDataDir(pg *pgInstall) (string, error) {
	templateCache.once.Do(func() {
		templateCache.dir, templateCache.err = ensureTemplate(pg)
	})
	return templateCache.dir, templateCache.err
}

func ensureTemplate(pg *pgInstall) (string, error) {
	root := filepath.Join(os.TempDir(), fmt.Sprintf("drover-testkit-pg%s-f%s-u%d", pg.version, templateFormat, os.Getuid()))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("pgserver: template cache dir: %w", err)
	}
	if err := pg.chown(root); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(root, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	data := filepath.Join(root, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return data, nil
	}
	// initdb into a scratch name and rename, so a crash midway never leaves
	// a half-made template that looks complete.
	scratch := filepath.Join(root, "initdb-tmp")
	if err := os.RemoveAll(scratch); err != nil {
		return "", fmt.Errorf("pgserver: clear %s: %w", scratch, err)
	}
	cmd := pg.command("initdb", "-D", scratch, "-U", "postgres", "--auth=trust",
		"--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgserver: initdb: %w\n%s", err, out)
	}
	if err := os.Rename(scratch, data); err != nil {
		return "", fmt.Errorf("pgserver: install template: %w", err)
	}
	return data, nil
}

// lockFile takes an exclusive flock on path, blocking until it is free.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgserver: open lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pgserver: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// copyDataDir copies the template data directory to dst preserving modes and
// ownership (the data dir must stay 0700 and owned by the server's user).
func copyDataDir(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: copy template data dir: %w\n%s", err, out)
	}
	return nil
}
