package local

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// TestUserName: machine user names are valid for useradd, at most 31
// characters, stable, and differ between controllers, models and machines.
func TestUserName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][-a-z0-9]*$`)
	const c1, c2 = "4f1e8a52-0c1d-4c2a-9f55-9a4e1c2b3d4e", "0b8d2b6e-5d6f-47a1-8c39-2f1d0e9a7b6c"
	const m1, m2 = "7551cc74-3378-4359-a860-80081ea52edc", "d2c9f0aa-1b7e-4c55-93a2-6f0e2b1c9d8f"
	seen := map[string]string{}
	for _, c := range []string{c1, c2} {
		for _, m := range []string{m1, m2} {
			for _, id := range []string{"0", "1", "10", "9999999999", "0/lxd/1", "12345678901"} {
				name := UserName(c, m, id)
				what := c + " " + m + " " + id
				if len(name) > maxUserName || !valid.MatchString(name) {
					t.Errorf("%s: %q is not a valid user name", what, name)
				}
				if other, ok := seen[name]; ok {
					t.Errorf("%s and %s share the user %q", what, other, name)
				}
				seen[name] = what
				if UserName(c, m, id) != name {
					t.Errorf("%s: the name is not stable", what)
				}
			}
		}
	}
	if got := UserName(c1, m1, "3"); !strings.HasPrefix(got, "drover-3-") {
		t.Errorf("machine 3's user %q does not name the machine", got)
	}
}

// TestFilesInAMachineDirectory: the provisioner's writes and reads in a
// machine's directory, which its user controls, never follow a link, open
// a FIFO, or append to a file with a second name.
func TestFilesInAMachineDirectory(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "agent.conf")
	for _, link := range []string{conf, conf + ".tmp"} {
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeOwned(conf, []byte("secret"), nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(conf); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent.conf after a write over a link: %v %v", fi, err)
	}

	logLink := filepath.Join(dir, "agent.log")
	if err := os.Symlink(victim, logLink); err != nil {
		t.Fatal(err)
	}
	if f, err := openLog(logLink, nil); err == nil {
		f.Close()
		t.Error("openLog followed a symlink")
	}
	hard := filepath.Join(filepath.Dir(victim), "agent.log")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	if f, err := openLog(hard, nil); err == nil {
		f.Close()
		t.Error("openLog appended to a file with two names")
	}
	fifo := filepath.Join(dir, "agent.pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSmall(fifo); err == nil {
		t.Error("readSmall read a FIFO")
	}
	if pid := readPID(dir); pid != 0 {
		t.Errorf("readPID from a FIFO: %d", pid)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "untouched" {
		t.Fatalf("the link's target was written: %q %v", b, err)
	}
}

// TestCheckReachable: as root, a machine directory must be reachable by
// machine users and its parents replaceable by no one but root.
func TestCheckReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("directories are owned by root only when the test runs as root")
	}
	root, err := os.MkdirTemp("", "drover-reachable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o755, true}, {0o711, true}, {0o700, false}, {0o777, false}, {0o775, false}} {
		if err := os.Chmod(root, c.mode); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "machines")
		os.Mkdir(dir, 0o755)
		if err := checkReachable(dir); (err == nil) != c.ok {
			t.Errorf("parent mode %04o: %v", c.mode, err)
		}
	}
	if err := checkReachable(t.TempDir()); err == nil {
		t.Error("t.TempDir (0700) is reachable")
	}
}

// TestSharedModeWarns: a controller that is not root runs machines as its
// own user, and says so in its log and in each machine's instance status.
func TestSharedModeWarns(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("shared mode is the mode of a controller not running as root; run this test as another user")
	}
	store, err := state.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var statuses []*state.SetStatusRequest
	p, err := New(Config{Store: store, Events: stream.NewBroker(16), Dir: t.TempDir(), AgentBinary: "drover-agent",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Propose: func(ctx context.Context, mt state.MessageType, req any) (any, uint64, error) {
			if r, ok := req.(*state.SetStatusRequest); ok {
				statuses = append(statuses, r)
			}
			return nil, 0, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "SECURITY") || !strings.Contains(logs.String(), "CA key") {
		t.Errorf("no warning at start: %s", logs.String())
	}
	if err := p.markRunning(t.Context(), "model", "0"); err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || statuses[0].Status.Message != sharedModeMessage {
		t.Errorf("instance status: %+v", statuses)
	}
}
