package hooktools

import (
	"errors"
	"fmt"
	"github.com/droverhq/drover/agent/internal/hookctx"
	"maps"
	"regexp"
	"strings"
)

func init() {
	register("state-get", func() tool { return &stateGet{} })
	register("state-set", func() tool { return &stateSet{} })
	register("state-delete", func() tool { return &stateDelete{} })
	register("storage-get", func() tool { return &storageGet{} })
	register("storage-list", func() tool { return &storageList{} })
	register("credential-get", func() tool {
		return &unsupported{name: "credential-get", purpose: "Access cloud credentials.",
			err: "cannot access cloud credentials: credential-get is not supported on this cloud", format: true}
	})
	register("juju-reboot", func() tool { return &jujuReboot{} })
	register("resource-get", func() tool { return &resourceGet{} })
}

type stateGet struct {
	out    output
	key    string
	strict bool
}

func (c *stateGet) info() info {
	return info{name: "state-get", args: "[<key>]", purpose: "Print server-side-state value.", doc: `
state-get prints the value of the server side state specified by key.
If no key is given, or if the key is "-", all keys and values will be printed.

See also:
    state-delete
    state-set`}
}

func (c *stateGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	fs.boolVar(&c.strict, "Return an error if the requested key does not exist", "strict")
}

func (c *stateGet) init(e *env, args []string) error {
	if len(args) > 0 {
		if c.key = args[0]; c.key == "-" {
			c.key = ""
		}
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *stateGet) run(e *env) error {
	st := e.hc.State()
	if c.key == "" {
		return c.out.write(e, st)
	}
	v, ok := st[c.key]
	if !ok && c.strict {
		return fmt.Errorf("%q not found", c.key)
	}
	return c.out.write(e, v)
}

type stateSet struct {
	file     string
	settings map[string]string
}

func (c *stateSet) info() info {
	return info{name: "state-set", args: "key=value [key=value ...]", purpose: "Set server-side-state values.", doc: `
state-set sets the value of the server side state specified by key.

The --file option should be used when one or more key-value pairs
are too long to fit within the command length limit of the shell
or operating system. The file will contain a YAML map containing
the settings as strings.  Settings in the file will be overridden
by any duplicate key-value arguments. A value of "-" for the filename
means <stdin>.

The following fixed size limits apply:
- Length of stored keys cannot exceed 256 bytes.
- Length of stored values cannot exceed 65536 bytes.

See also:
    state-delete
    state-get`}
}

func (c *stateSet) setFlags(fs *flagSet, e *env) {
	fs.stringVar(&c.file, "", "File containing key-value pairs", "file")
}

func (c *stateSet) init(e *env, args []string) error {
	var err error
	c.settings, err = parseKeyValues(args)
	return err
}

func (c *stateSet) run(e *env) error {
	settings, err := fileThenArgs(e, c.file, c.settings)
	if err != nil {
		return err
	}
	return e.hc.SetState(settings)
}

// fileThenArgs reads the key/value map of --file (if given; "-" is stdin)
// and lets the k=v arguments override it, as relation-set and state-set do.
func fileThenArgs(e *env, file string, args map[string]string) (map[string]string, error) {
	settings := map[string]string{}
	if file != "" {
		data, err := e.readFile(file)
		if err != nil {
			return nil, err
		}
		if settings, err = parseStringMap(data); err != nil {
			return nil, err
		}
	}
	maps.Copy(settings, args)
	return settings, nil
}

type stateDelete struct{ key string }

func (c *stateDelete) info() info {
	return info{name: "state-delete", args: "<key>", purpose: "Delete server-side-state key value pair.", doc: `
state-delete deletes the value of the server side state specified by key.

See also:
    state-get
    state-set`}
}

func (c *stateDelete) setFlags(fs *flagSet, e *env) {}

func (c *stateDelete) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("specify a key")
	}
	c.key = args[0]
	return checkEmpty(args[1:])
}

func (c *stateDelete) run(e *env) error {
	e.hc.DeleteState(c.key)
	return nil
}

var validStorageID = regexp.MustCompile(`^[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*/(?:0|[1-9][0-9]*)$`)

type storageIDValue struct{ p *string }

func (v storageIDValue) Set(s string) error {
	if !validStorageID.MatchString(s) {
		return fmt.Errorf("invalid storage ID %q", s)
	}
	*v.p = s
	return nil
}
func (v storageIDValue) String() string { return *v.p }

// storageGet and storageList answer as Juju does for a unit with no
// storage attached: Drover does not provision storage yet.
type storageGet struct {
	out output
	id  string
}

func (c *storageGet) info() info {
	return info{name: "storage-get", args: "[<key>]", purpose: "Print information for the storage instance with the specified ID.", doc: `
When no <key> is supplied, all keys values are printed. The --storage (-s)
option defaults to the storage instance of a storage hook.`}
}

func (c *storageGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	c.id = e.hc.StorageID()
	fs.add(storageIDValue{&c.id}, false, "Specify a storage instance by id", "s")
}

func (c *storageGet) init(e *env, args []string) error {
	if c.id == "" {
		return errors.New("no storage instance specified")
	}
	if len(args) > 0 {
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *storageGet) run(e *env) error {
	return fmt.Errorf("storage instance %q not found", c.id)
}

type storageList struct{ out output }

func (c *storageList) info() info {
	return info{name: "storage-list", args: "[<storage-name>]", purpose: "List storage attached to the unit.", doc: `
storage-list will list the names of all storage instances
attached to the unit. These names can be passed to storage-get
via the "-s" flag to query the storage attributes.`}
}

func (c *storageList) setFlags(fs *flagSet, e *env) { c.out.addFlags(fs, "smart") }

func (c *storageList) init(e *env, args []string) error {
	if len(args) > 0 {
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *storageList) run(e *env) error { return c.out.write(e, []string{}) }

type resourceGet struct{ name string }

func (c *resourceGet) info() info {
	return info{name: "resource-get", args: "<resource name>", purpose: "Get the path to the locally cached resource file."}
}

func (c *resourceGet) setFlags(fs *flagSet, e *env) {}

func (c *resourceGet) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("missing required resource name")
	}
	c.name = args[0]
	return checkEmpty(args[1:])
}

func (c *resourceGet) run(e *env) error {
	path, err := e.hc.ResourceGet(e.ctx, c.name)
	if errors.Is(err, hookctx.ErrNotFound) {
		return fmt.Errorf("could not download resource: resource %q not found", c.name)
	}
	if err != nil {
		return fmt.Errorf("could not download resource: %w", err)
	}
	// Juju prints the path with no newline.
	e.stdout.WriteString(path)
	return nil
}

// jujuReboot asks the machine agent to reboot the machine: after the hook
// succeeds, or with --now at once (the hook is killed and runs again after
// the reboot).
type jujuReboot struct{ now bool }

func (c *jujuReboot) info() info {
	return info{name: "juju-reboot", purpose: "Reboot the host machine.", doc: `
juju-reboot causes the host machine to reboot, after stopping all containers
hosted on the machine.

An invocation without arguments will allow the current hook to complete, and
will only cause a reboot if the hook completes successfully.

If the --now flag is passed, the current hook will terminate immediately, and
be restarted from scratch after reboot. This allows charm authors to write
hooks that need to reboot more than once in the course of installing software.

The --now flag cannot terminate a debug-hooks session; hooks using --now should
be sure to terminate on unexpected errors, so as to guarantee expected
behaviour in all situations.

juju-reboot is not supported when running actions.`}
}

func (c *jujuReboot) setFlags(fs *flagSet, e *env) {
	fs.boolVar(&c.now, "Reboot immediately, killing the invoking process", "now")
}

func (c *jujuReboot) init(e *env, args []string) error { return checkEmpty(args) }

func (c *jujuReboot) run(e *env) error {
	if _, inAction := e.hc.Action().Info(); inAction {
		return errors.New("juju-reboot is not supported when running an action")
	}
	return e.hc.RequestReboot(c.now)
}

// unsupported is a tool this cloud cannot serve; it parses Juju's flags so
// that only the runtime error differs.
type unsupported struct {
	name, purpose, err string
	format             bool
	out                output
}

func (c *unsupported) info() info { return info{name: c.name, purpose: c.purpose} }

func (c *unsupported) setFlags(fs *flagSet, e *env) {
	if c.format {
		c.out.addFlags(fs, "smart")
	}
}

func (c *unsupported) init(e *env, args []string) error { return checkEmpty(args) }

func (c *unsupported) run(e *env) error {
	return errors.New(strings.TrimSpace(c.err))
}
