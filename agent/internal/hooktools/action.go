package hooktools

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

func init() {
	register("action-get", func() tool { return &actionGet{} })
	register("action-set", func() tool { return &actionSet{} })
	register("action-log", func() tool { return &actionLog{} })
	register("action-fail", func() tool { return &actionFail{} })
	register("leader-get", func() tool { return &leaderGet{} })
	register("leader-set", func() tool { return &leaderSet{} })
}

type actionGet struct {
	out  output
	path []string
}

func (c *actionGet) info() info {
	return info{name: "action-get", args: "[<key>[.<key>.<key>...]]", purpose: "Get action parameters.", doc: `
action-get will print the value of the parameter at the given key, serialized
as YAML.  If multiple keys are passed, action-get will recurse into the param
map as needed.`}
}

func (c *actionGet) setFlags(fs *flagSet, e *env) { c.out.addFlags(fs, "smart") }

func (c *actionGet) init(e *env, args []string) error {
	if len(args) > 0 {
		c.path = strings.Split(args[0], ".")
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *actionGet) run(e *env) error {
	params, err := e.hc.Action().Params()
	if err != nil {
		return err
	}
	if len(c.path) == 0 {
		if params == nil {
			params = map[string]any{}
		}
		return c.out.write(e, params)
	}
	var v any = params
	for _, k := range c.path {
		m, ok := v.(map[string]any)
		if !ok {
			return c.out.write(e, nil)
		}
		if v, ok = m[k]; !ok {
			return c.out.write(e, nil)
		}
	}
	return c.out.write(e, v)
}

// reservedResultKeys are the action results Juju fills in itself.
var reservedResultKeys = []string{"stdout", "stdout-encoding", "stderr", "stderr-encoding"}

type actionSet struct{ results [][]string }

func (c *actionSet) info() info {
	return info{name: "action-set", args: "<key>=<value> [<key>=<value> ...]", purpose: "Set action results.", doc: fmt.Sprintf(`
action-set adds the given values to the results map of the Action. This map
is returned to the user after the completion of the Action. Keys must start
and end with lowercase alphanumeric, and contain only lowercase alphanumeric,
hyphens and periods.  The following special keys are reserved for internal use:
"%s".`, strings.Join(reservedResultKeys, `", "`))}
}

func (c *actionSet) setFlags(fs *flagSet, e *env) {}

func (c *actionSet) init(e *env, args []string) error {
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("argument %q must be of the form key...=value", a)
		}
		path := strings.Split(k, ".")
		for _, seg := range path {
			if !validKeySeg.MatchString(seg) {
				return fmt.Errorf("key %q must start and end with lowercase alphanumeric, and contain only lowercase alphanumeric, hyphens and periods", seg)
			}
			for _, r := range reservedResultKeys {
				if seg == r {
					return fmt.Errorf("cannot set reserved action key %q", seg)
				}
			}
		}
		c.results = append(c.results, append(path, v))
	}
	return nil
}

func (c *actionSet) run(e *env) error {
	for _, r := range c.results {
		if err := e.hc.Action().SetResult(r[:len(r)-1], r[len(r)-1]); err != nil {
			return err
		}
	}
	return nil
}

type actionLog struct{ message string }

func (c *actionLog) info() info {
	return info{name: "action-log", args: "<message>", purpose: "Record a progress message for the current action."}
}

func (c *actionLog) setFlags(fs *flagSet, e *env) {}

func (c *actionLog) init(e *env, args []string) error {
	if len(args) == 0 {
		return errors.New("no message specified")
	}
	c.message = strings.Join(args, " ")
	return nil
}

func (c *actionLog) run(e *env) error { return e.hc.Action().Log(e.ctx, c.message) }

type actionFail struct{ message string }

func (c *actionFail) info() info {
	return info{name: "action-fail", args: "[\"<failure message>\"]", purpose: "Set action fail status with message.", doc: `
action-fail sets the fail state of the action with a given error message.  Using
action-fail without a failure message will set a default message indicating a
problem with the action.`}
}

func (c *actionFail) setFlags(fs *flagSet, e *env) {}

func (c *actionFail) init(e *env, args []string) error {
	c.message = hookctx.DefaultActionFailMessage
	if len(args) > 0 {
		c.message = args[0]
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *actionFail) run(e *env) error { return e.hc.Action().Fail(c.message) }

type leaderGet struct {
	out output
	key string
}

func (c *leaderGet) info() info {
	return info{name: "leader-get", args: "[<key>]", purpose: "Print application leadership settings.", doc: `
leader-get prints the value of a leadership setting specified by key. If no key
is given, or if the key is "-", all keys and values will be printed.`}
}

func (c *leaderGet) setFlags(fs *flagSet, e *env) { c.out.addFlags(fs, "smart") }

func (c *leaderGet) init(e *env, args []string) error {
	if len(args) > 0 {
		if c.key = args[0]; c.key == "-" {
			c.key = ""
		}
		return checkEmpty(args[1:])
	}
	return nil
}

func (c *leaderGet) run(e *env) error {
	s, err := e.hc.LeaderSettings(e.ctx)
	if err != nil {
		return fmt.Errorf("cannot read leadership settings: %w", err)
	}
	if c.key == "" {
		if s == nil {
			s = map[string]string{}
		}
		return c.out.write(e, s)
	}
	if v, ok := s[c.key]; ok {
		return c.out.write(e, v)
	}
	return c.out.write(e, nil)
}

type leaderSet struct{ settings map[string]string }

func (c *leaderSet) info() info {
	return info{name: "leader-set", args: "<key>=<value> [...]", purpose: "Write application leadership settings.", doc: `
leader-set immediate writes the supplied key/value pairs to the controller,
which will then inform non-leader units of the change. It will fail if called
without arguments, or if called by a unit that is not currently application leader.`}
}

func (c *leaderSet) setFlags(fs *flagSet, e *env) {}

func (c *leaderSet) init(e *env, args []string) error {
	var err error
	c.settings, err = parseKeyValues(args)
	return err
}

func (c *leaderSet) run(e *env) error {
	if err := e.hc.SetLeaderSettings(e.ctx, maps.Clone(c.settings)); err != nil {
		return fmt.Errorf("cannot write leadership settings: %w", err)
	}
	return nil
}
