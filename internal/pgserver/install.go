package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrNoPostgres means no PostgreSQL server binaries were found.
var ErrNoPostgres = errors.New("pgserver: PostgreSQL binaries (postgres, initdb) not found on PATH or under /usr/lib/postgresql/*/bin; run `make deps`")

// pgInstall describes the PostgreSQL binaries found on this machine and how to
// run them: as root, servers run as the "postgres" OS user because
// PostgreSQL refuses to run as root.
type pgInstall struct {
	binDir  string
	version string              // "15.14", from `postgres --version`
	cred    *syscall.Credential // nil when not root
	uid     int
	gid     int
}

var install struct {
	once sync.Once
	pg   *pgInstall
	err  error
}

// findInstall locates and describes the PostgreSQL installation once per
// process.
func findInstall() (*pgInstall, error) {
	install.once.Do(func() {
		install.pg, install.err = probeInstall()
	})
	return install.pg, install.err
}

func probeInstall() (*pgInstall, error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("pgserver: %s/postgres --version: %w", binDir, err)
	}
	version := regexp.MustCompile(`\d+(\.\d+)*`).FindString(string(out))
	if version == "" {
		return nil, fmt.Errorf("pgserver: cannot parse PostgreSQL version from %q", out)
	}
	pg := &pgInstall{binDir: binDir, version: version, uid: os.Getuid(), gid: os.Getgid()}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgserver: running as root needs the postgres OS user: %w", err)
		}
		uid, err := strconv.Atoi(u.Uid)
		if err != nil {
			return nil, fmt.Errorf("pgserver: postgres uid %q: %w", u.Uid, err)
		}
		gid, err := strconv.Atoi(u.Gid)
		if err != nil {
			return nil, fmt.Errorf("pgserver: postgres gid %q: %w", u.Gid, err)
		}
		pg.uid, pg.gid = uid, gid
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	return pg, nil
}

// findBinDir prefers binaries on PATH (following symlinks to the real
// directory, where initdb finds its postgres), then the highest version under
// /usr/lib/postgresql.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin") // the pattern is valid
	slices.SortFunc(dirs, func(a, b string) int { return compareVersions(majorOf(b), majorOf(a)) })
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func hasServer(dir string) bool {
	for _, name := range []string{"postgres", "initdb"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// majorOf extracts "15" from "/usr/lib/postgresql/15/bin".
func majorOf(binDir string) string { return filepath.Base(filepath.Dir(binDir)) }

// compareVersions orders dotted numeric versions; non-numeric parts sort low.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// command builds an exec.Cmd for a PostgreSQL binary running as the right
// user. Pdeathsig stops an orphaned server if its parent (a test binary,
// droverd) dies. It runs in a process group of its own, so that a
// terminal's Ctrl-C reaches only its parent, which stops it after what
// uses it; a server stopped under droverd would look like a crash.
func (pg *pgInstall) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(pg.binDir, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	return cmd
}

// chown gives path to the user the server runs as; a no-op unless root.
func (pg *pgInstall) chown(path string) error {
	if pg.cred == nil {
		return nil
	}
	if err := os.Chown(path, pg.uid, pg.gid); err != nil {
		return fmt.Errorf("pgserver: chown %s: %w", path, err)
	}
	return nil
}
