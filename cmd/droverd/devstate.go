package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/droverhq/drover/internal/pgserver"
	"github.com/droverhq/drover/spoke/provider/local"
)

// devLockFile, in the state dir, is locked while a droverd dev runs on it.
const devLockFile = ".lock"

// devSpokes are the dev federation's controllers; each keeps its data in
// STATE/spoke-NAME.
var devSpokes = []string{"east", "west"}

// openDevState makes the state dir (traversable by the postgres user),
// checks that user can enter it, and locks it for this process. unlock
// releases the lock.
func openDevState(stateDir string) (unlock func(), err error) {
	if err := prepareStateDir(stateDir); err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	if err := pgserver.CheckAccess(stateDir); err != nil {
		var ae *pgserver.AccessError
		if errors.As(err, &ae) {
			return nil, usageError{fmt.Errorf("--state-dir %s: %w", stateDir, err)}
		}
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(stateDir, devLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another droverd dev is running on %s; stop it first (Ctrl-C), or give another --state-dir", stateDir)
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// resetDevState deletes the federation kept in stateDir (locked by
// openDevState): its controllers'
// local machines (their processes, directories and, as root, users, which
// live outside the state dir), then everything in the dir but its lock.
func resetDevState(stateDir string) error {
	for _, name := range devSpokes {
		dir := local.DefaultDir(filepath.Join(stateDir, "spoke-"+name))
		if err := local.DestroyMachines(dir, 5*time.Second); err != nil {
			return fmt.Errorf("controller %s's machines: %w", name, err)
		}
	}
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == devLockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(stateDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
