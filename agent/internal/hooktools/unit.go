package hooktools

import (
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/api"
)

func init() {
	register("status-get", func() tool { return &statusGet{} })
	register("status-set", func() tool { return &statusSet{} })
	register("application-version-set", func() tool { return &versionSet{} })
	register("is-leader", func() tool { return &isLeader{} })
	register("config-get", func() tool { return &configGet{} })
	register("juju-log", func() tool { return &jujuLog{} })
	register("unit-get", func() tool { return &unitGet{} })
}

type statusGet struct {
	out         output
	includeData bool
	application bool
}

func (c *statusGet) info() info {
	return info{name: "status-get", args: "[--include-data] [--application]", purpose: "Print status information.", doc: `
By default, only the status value is printed.
If the --include-data flag is passed, the associated data are printed also.

Include the --application option to get the overall status for the application, rather than an individual unit.`}
}

func (c *statusGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	fs.boolVar(&c.includeData, "Print all status data", "include-data")
	fs.boolVar(&c.application, "Print status for all units of this application if this unit is the leader", "application")
}

func (c *statusGet) init(e *env, args []string) error { return checkEmpty(args) }

func statusDetails(st api.Status, includeData bool) map[string]any {
	d := map[string]any{"status": st.Status}
	if includeData {
		data := map[string]any{}
		for k, v := range st.Data {
			data[k] = v
		}
		d["status-data"] = data
		d["message"] = st.Message
	}
	return d
}

func (c *statusGet) run(e *env) error {
	if !c.application {
		st, err := e.hc.UnitStatus(e.ctx)
		if err != nil {
			return fmt.Errorf("finding workload status: %w", err)
		}
		if !c.includeData && c.out.name() == "smart" {
			return c.out.write(e, st.Status)
		}
		return c.out.write(e, statusDetails(st, c.includeData))
	}
	as, err := e.hc.ApplicationStatus(e.ctx)
	if err != nil {
		return fmt.Errorf("finding application status: %w", err)
	}
	if !c.includeData && c.out.name() == "smart" {
		return c.out.write(e, as.Application.Status)
	}
	d := statusDetails(as.Application, c.includeData)
	units := map[string]any{}
	for name, st := range as.Units {
		units[name] = statusDetails(st, c.includeData)
	}
	d["units"] = units
	return c.out.write(e, map[string]any{"application-status": d})
}

type statusSet struct {
	application     bool
	status, message string
}

func (c *statusSet) info() info {
	return info{name: "status-set", args: "<maintenance | blocked | waiting | active> [message]", purpose: "Set status information.", doc: `
Sets the workload status of the charm. Message is optional.
The "last updated" attribute of the status is set, even if the
status and message are the same as what's already set.`}
}

func (c *statusSet) setFlags(fs *flagSet, e *env) {
	fs.boolVar(&c.application, "Set this status for the application to which the unit belongs if the unit is the leader", "application")
}

var settableStatuses = []string{"maintenance", "blocked", "waiting", "active"}

func (c *statusSet) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("invalid args, require <status> [message]")
	}
	valid := false
	for _, s := range settableStatuses {
		valid = valid || s == args[0]
	}
	if !valid {
		return fmt.Errorf("invalid status %q, expected one of [%s]", args[0], strings.Join(settableStatuses, " "))
	}
	c.status = args[0]
	if len(args) > 1 {
		c.message = args[1]
		return checkEmpty(args[2:])
	}
	return nil
}

func (c *statusSet) run(e *env) error {
	st := api.Status{Status: c.status, Message: c.message}
	if c.application {
		return e.hc.SetApplicationStatus(e.ctx, st)
	}
	return e.hc.SetUnitStatus(e.ctx, st)
}

type versionSet struct{ version string }

func (c *versionSet) info() info {
	return info{name: "application-version-set", args: "<new-version>", purpose: "Specify which version of the application is deployed.", doc: `
application-version-set tells Juju which version of the application
software is running. This could be a package version number or some
other useful identifier, such as a Git hash, that indicates the
version of the deployed software. (It shouldn't be confused with the
charm revision.) The version set will be displayed in "juju status"
output for the application.`}
}

func (c *versionSet) setFlags(fs *flagSet, e *env) {}

func (c *versionSet) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("no version specified")
	}
	c.version = args[0]
	return checkEmpty(args[1:])
}

func (c *versionSet) run(e *env) error { return e.hc.SetWorkloadVersion(e.ctx, c.version) }

type isLeader struct{ out output }

func (c *isLeader) info() info {
	return info{name: "is-leader", purpose: "Print application leadership status.", doc: `
is-leader prints a boolean indicating whether the local unit is guaranteed to
be application leader for at least 30 seconds. If it fails, you should assume that
there is no such guarantee.`}
}

func (c *isLeader) setFlags(fs *flagSet, e *env)     { c.out.addFlags(fs, "smart") }
func (c *isLeader) init(e *env, args []string) error { return checkEmpty(args) }

func (c *isLeader) run(e *env) error {
	leader, err := e.hc.IsLeader(e.ctx)
	if err != nil {
		return fmt.Errorf("leadership status unknown: %w", err)
	}
	return c.out.write(e, leader)
}

type configGet struct {
	out output
	all bool
	key string
}

func (c *configGet) info() info {
	return info{name: "config-get", args: "[<key>]", purpose: "Print application configuration.", doc: `
When no <key> is supplied, all keys with values or defaults are printed. If
--all is set, all known keys are printed; those without defaults or values are
reported as null. <key> and --all are mutually exclusive.`}
}

func (c *configGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	fs.boolVar(&c.all, "Print all keys", "a", "all")
}

func (c *configGet) init(e *env, args []string) error {
	if len(args) == 0 {
		return nil
	}
	c.key = args[0]
	if c.key != "" && c.all {
		return errors.New("cannot use argument --all together with key " + c.key)
	}
	return checkEmpty(args[1:])
}

func (c *configGet) run(e *env) error {
	cfg := e.hc.Config(c.all)
	if c.key == "" {
		return c.out.write(e, cfg)
	}
	return c.out.write(e, cfg[c.key])
}

type jujuLog struct {
	debug   bool
	level   string
	format  string
	message string
}

func (c *jujuLog) info() info {
	return info{name: "juju-log", args: "<message>", purpose: "Write a message to the juju log.", doc: `
juju-log logs messages using the juju logging system. The message is the
remaining arguments joined with spaces. Relation hooks prefix it with the
relation identifier.`}
}

func (c *jujuLog) setFlags(fs *flagSet, e *env) {
	fs.boolVar(&c.debug, "log at debug level", "debug")
	fs.stringVar(&c.level, "INFO", "Send log message at the given level", "l", "log-level")
	fs.stringVar(&c.format, "", "Deprecated format flag", "format")
}

func (c *jujuLog) init(e *env, args []string) error {
	if len(args) == 0 {
		return errors.New("no message specified")
	}
	c.message = strings.Join(args, " ")
	return nil
}

func (c *jujuLog) run(e *env) error {
	level := c.level
	if c.debug {
		level = "DEBUG"
	}
	e.hc.Log(level, c.message)
	return nil
}

type unitGet struct {
	out output
	key string
}

func (c *unitGet) info() info {
	return info{name: "unit-get", args: "<setting>", purpose: "Print public-address or private-address."}
}

func (c *unitGet) setFlags(fs *flagSet, e *env) { c.out.addFlags(fs, "smart") }

func (c *unitGet) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("no setting specified")
	}
	if args[0] != "private-address" && args[0] != "public-address" {
		return fmt.Errorf("unknown setting %q", args[0])
	}
	c.key = args[0]
	return checkEmpty(args[1:])
}

func (c *unitGet) run(e *env) error {
	return c.out.write(e, e.hc.Address(c.key == "public-address"))
}
