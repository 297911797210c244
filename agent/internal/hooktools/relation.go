package hooktools

import (
	"errors"
	"fmt"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

func init() {
	register("relation-get", func() tool { return &relationGet{} })
	register("relation-set", func() tool { return &relationSet{} })
	register("relation-list", func() tool { return &relationList{} })
	register("relation-ids", func() tool { return &relationIDs{} })
	register("relation-model-get", func() tool { return &relationModelGet{} })
}

type relationGet struct {
	out    output
	relID  int
	app    bool
	key    string
	target string
}

func (c *relationGet) info() info {
	return info{name: "relation-get", args: "<key> <unit id>", purpose: "Get relation settings.", doc: `
relation-get prints the value of a unit's relation setting, specified by key.
If no key is given, or if the key is "-", all keys and values will be printed.

A unit can see its own settings by calling "relation-get - MYUNIT", this will include
any changes that have been made with "relation-set".

When reading remote relation data, a charm can call relation-get --app - to get
the data for the application data bag that is set by the remote applications
leader.

Key value pairs for remote units that have departed remain accessible for the lifetime
of the relation.`}
}

func (c *relationGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	addRelationFlag(fs, e, &c.relID, "Specify a relation by id")
	fs.boolVar(&c.app, "Get the relation data for the overall application, not just a unit", "app")
}

func (c *relationGet) init(e *env, args []string) error {
	if c.relID < 0 {
		return errors.New("no relation id specified")
	}
	if len(args) > 0 {
		if c.key = args[0]; c.key == "-" {
			c.key = ""
		}
		args = args[1:]
	}
	hr, _ := e.hc.HookRelation()
	switch {
	case len(args) > 0:
		name := args[0]
		args = args[1:]
		if c.app {
			if m := validUnit.FindStringSubmatch(name); m != nil {
				name = m[1]
			} else if !validApp.MatchString(name) {
				return fmt.Errorf("invalid application name %q", name)
			}
		} else if !validUnit.MatchString(name) {
			if validApp.MatchString(name) {
				return fmt.Errorf("expected unit name, got application name %q", name)
			}
			return fmt.Errorf("invalid unit name %q", name)
		}
		c.target = name
	case c.app:
		if hr.RemoteApp == "" {
			return errors.New("no unit or application specified")
		}
		c.target = hr.RemoteApp
	case hr.RemoteUnit != "":
		c.target = hr.RemoteUnit
	case hr.RemoteApp != "":
		c.target, c.app = hr.RemoteApp, true
	default:
		return errors.New("no unit or application specified")
	}
	return checkEmpty(args)
}

func (c *relationGet) run(e *env) error {
	settings, err := e.hc.ReadSettings(e.ctx, c.relID, c.target, c.app)
	if err != nil {
		return err
	}
	if c.key == "" {
		return c.out.write(e, settings)
	}
	if v, ok := settings[c.key]; ok {
		return c.out.write(e, v)
	}
	return c.out.write(e, nil)
}

type relationSet struct {
	relID    int
	app      bool
	file     string
	format   string
	settings map[string]string
}

func (c *relationSet) info() info {
	return info{name: "relation-set", args: "key=value [key=value ...]", purpose: "Set relation settings.", doc: `
"relation-set" writes the local unit's settings for some relation.
If no relation is specified then the current relation is used. The
setting values are not inspected and are stored as strings. Setting
an empty string causes the setting to be removed. Duplicate settings
are not allowed.

If the unit is the leader, it can set the application settings using
"--app". These are visible to related applications via 'relation-get --app'
or by supplying the application name to 'relation-get' in place of
a unit name.

The --file option should be used when one or more key-value pairs are
too long to fit within the command length limit of the shell or
operating system. The file will contain a YAML map containing the
settings.  Settings in the file will be overridden by any duplicate
key-value arguments. A value of "-" for the filename means <stdin>.`}
}

func (c *relationSet) setFlags(fs *flagSet, e *env) {
	addRelationFlag(fs, e, &c.relID, "Specify a relation by id")
	fs.stringVar(&c.file, "", "File containing key-value pairs", "file")
	fs.boolVar(&c.app, `Pick whether you are setting "application" settings or "unit" settings`, "app")
	fs.stringVar(&c.format, "", "Deprecated format flag", "format")
}

func (c *relationSet) init(e *env, args []string) error {
	if c.relID < 0 {
		return errors.New("no relation id specified")
	}
	var err error
	c.settings, err = parseKeyValues(args)
	return err
}

func (c *relationSet) run(e *env) error {
	settings, err := fileThenArgs(e, c.file, c.settings)
	if err != nil {
		return err
	}
	if c.format != "" {
		fmt.Fprintf(e.stderr, "--format flag deprecated for command %q", "relation-set")
	}
	err = e.hc.SetSettings(e.ctx, c.relID, c.app, settings)
	if errors.Is(err, hookctx.ErrNotLeader) {
		return errors.New("cannot write relation settings")
	}
	return err
}

type relationList struct {
	out   output
	relID int
	app   bool
}

func (c *relationList) info() info {
	return info{name: "relation-list", purpose: "List relation units.", doc: `
-r must be specified when not in a relation hook

relation-list outputs a list of all the related units. The order is
arbitrary and should not be depended upon. If the --app flag is given,
the name of the related application is printed instead.`}
}

func (c *relationList) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	addRelationFlag(fs, e, &c.relID, "Specify a relation by id")
	fs.boolVar(&c.app, "List remote application instead of participating units", "app")
}

func (c *relationList) init(e *env, args []string) error {
	if c.relID < 0 {
		return errors.New("no relation id specified")
	}
	return checkEmpty(args)
}

func (c *relationList) run(e *env) error {
	r, err := relationOrDefault(e, c.relID)
	if err != nil {
		return err
	}
	if c.app {
		if r.RemoteApp == "" {
			return c.out.write(e, e.hc.AppName())
		}
		return c.out.write(e, r.RemoteApp)
	}
	members := r.Members
	if members == nil {
		members = []string{}
	}
	return c.out.write(e, members)
}

type relationIDs struct {
	out      output
	endpoint string
}

func (c *relationIDs) info() info {
	return info{name: "relation-ids", args: "<name>", purpose: "List all relation ids for the given endpoint.", doc: `
Only relation ids for relations which are not broken are included.`}
}

func (c *relationIDs) setFlags(fs *flagSet, e *env) { c.out.addFlags(fs, "smart") }

func (c *relationIDs) init(e *env, args []string) error {
	if len(args) > 0 {
		c.endpoint = args[0]
		return checkEmpty(args[1:])
	}
	hr, ok := e.hc.HookRelation()
	if !ok {
		return errors.New("no endpoint name specified")
	}
	r, err := e.hc.Relation(hr.ID)
	if err != nil {
		return err
	}
	c.endpoint = r.Endpoint
	return nil
}

func (c *relationIDs) run(e *env) error {
	out := []string{}
	for _, id := range e.hc.RelationIDs(c.endpoint) {
		out = append(out, fmt.Sprintf("%s:%d", c.endpoint, id))
	}
	return c.out.write(e, out)
}

type relationModelGet struct {
	out   output
	relID int
}

func (c *relationModelGet) info() info {
	return info{name: "relation-model-get", purpose: "Get details about the model hosing a related application.", doc: `
-r must be specified when not in a relation hook

relation-model-get outputs details about the model hosting the application
on the other end of a unit relation.
If not running in a relation hook context, -r needs to be specified with a
relation identifier similar to the relation-get and relation-set commands.`}
}

func (c *relationModelGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	addRelationFlag(fs, e, &c.relID, "Specify a relation by id")
}

func (c *relationModelGet) init(e *env, args []string) error {
	if c.relID < 0 {
		return errors.New("no relation id specified")
	}
	return checkEmpty(args)
}

func (c *relationModelGet) run(e *env) error {
	r, err := relationOrDefault(e, c.relID)
	if err != nil {
		return err
	}
	uuid := r.RemoteModelUUID
	if uuid == "" {
		uuid = e.hc.ModelUUID()
	}
	return c.out.write(e, map[string]string{"uuid": uuid})
}
