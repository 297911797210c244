package hooktools

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/droverhq/drover/agent/internal/hookctx"
)

func init() {
	register("open-port", func() tool { return &portTool{open: true} })
	register("close-port", func() tool { return &portTool{} })
	register("opened-ports", func() tool { return &openedPorts{} })
	register("network-get", func() tool { return &networkGet{} })
	register("goal-state", func() tool { return &goalState{} })
}

type portTool struct {
	open      bool
	endpoints string
	format    string
	pr        hookctx.PortRange
}

func (c *portTool) info() info {
	if c.open {
		return info{name: "open-port", args: "<port>[/<protocol>] or <from>-<to>[/<protocol>] or icmp", purpose: "Register a request to open a port or port range.", doc: `
open-port registers a request to open the specified port or port range.

By default, the specified port or port range will be opened for all defined
application endpoints. The --endpoints option can be used to constrain the
open request to a comma-delimited list of application endpoints.

This operation is transactional, so changes will not be made unless the hook
exits successfully.`}
	}
	return info{name: "close-port", args: "<port>[/<protocol>] or <from>-<to>[/<protocol>] or icmp", purpose: "Register a request to close a port or port range.", doc: `
close-port registers a request to close the specified port or port range.

By default, the specified port or port range will be closed for all defined
application endpoints. The --endpoints option can be used to constrain the
close request to a comma-delimited list of application endpoints.`}
}

func (c *portTool) setFlags(fs *flagSet, e *env) {
	fs.stringVar(&c.format, "", "Deprecated format flag", "format")
	fs.stringVar(&c.endpoints, "", "A comma-delimited list of application endpoints to target with this operation", "endpoints")
}

func (c *portTool) init(e *env, args []string) error {
	if len(args) == 0 {
		return errors.New("no port or range specified")
	}
	pr, err := hookctx.ParsePortRange(args[0])
	if err != nil {
		return err
	}
	c.pr = pr
	return checkEmpty(args[1:])
}

func (c *portTool) run(e *env) error {
	if c.format != "" {
		fmt.Fprintf(e.stderr, "--format flag deprecated for command %q", c.info().name)
	}
	eps := []string{""}
	if c.endpoints != "" {
		eps = strings.Split(c.endpoints, ",")
	}
	for _, ep := range eps {
		if c.open {
			e.hc.Ports().Open(strings.TrimSpace(ep), c.pr)
		} else {
			e.hc.Ports().Close(strings.TrimSpace(ep), c.pr)
		}
	}
	return nil
}

type openedPorts struct {
	out       output
	endpoints bool
}

func (c *openedPorts) info() info {
	return info{name: "opened-ports", purpose: "List all ports or port ranges opened by the unit.", doc: `
opened-ports lists all ports or port ranges opened by a unit.

By default, the port range listing does not include information about the
application endpoints that each port range applies to. Each list entry is
formatted as <port>/<protocol> (e.g. "80/tcp") or <from>-<to>/<protocol>
(e.g. "8080-8088/udp").

If the --endpoints option is specified, each entry in the port list will be
augmented with a comma-delimited list of endpoints that the port range
applies to (e.g. "80/tcp (endpoint1, endpoint2)"). If a port range applies to
all endpoints, this will be indicated by the presence of a '*' character
(e.g. "80/tcp (*)").

Opening ports is transactional (i.e. will take place on successfully exiting
the current hook), and therefore opened-ports will not return any values for
pending open-port operations run from within the same hook.`}
}

func (c *openedPorts) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	fs.boolVar(&c.endpoints, "Display the list of target application endpoints for each port range", "endpoints")
}

func (c *openedPorts) init(e *env, args []string) error { return checkEmpty(args) }

func (c *openedPorts) run(e *env) error {
	byRange := map[hookctx.PortRange][]string{}
	var ranges []hookctx.PortRange
	for _, p := range e.hc.Ports().Opened() {
		if _, seen := byRange[p.Range]; !seen {
			ranges = append(ranges, p.Range)
		}
		byRange[p.Range] = append(byRange[p.Range], p.Endpoint)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Less(ranges[j]) })
	out := make([]string, 0, len(ranges))
	for _, r := range ranges {
		if !c.endpoints {
			out = append(out, r.String())
			continue
		}
		eps := byRange[r]
		desc := ""
		for _, ep := range eps {
			if ep == "" {
				desc = "*"
			}
		}
		if desc == "" {
			sort.Strings(eps)
			desc = strings.Join(eps, ", ")
		}
		out = append(out, fmt.Sprintf("%s (%s)", r, desc))
	}
	return c.out.write(e, out)
}

type networkGet struct {
	out                            output
	relID                          int
	binding                        string
	primary, bind, ingress, egress bool
	keys                           []string
}

func (c *networkGet) info() info {
	return info{name: "network-get", args: "<binding-name> [--ingress-address] [--bind-address] [--egress-subnets]", purpose: "Get network config.", doc: `
network-get returns the network config for a given binding name. By default
it returns the list of interfaces and associated addresses in the space for
the binding, as well as the ingress address for the binding. If defined, any
egress subnets are also returned.
If one of the following flags are specified, just that value is returned.
If more than one flag is specified, a map of values is returned.
    --bind-address: the address the local unit should listen on to serve connections, as well
                    as the address that should be advertised to its peers.
    --ingress-address: the address the local unit should advertise as being used for incoming connections.
    --egress-subnets: subnets (in CIDR notation) from which traffic on this relation will originate.`}
}

func (c *networkGet) setFlags(fs *flagSet, e *env) {
	c.out.addFlags(fs, "smart")
	fs.boolVar(&c.primary, "(deprecated) get the primary address for the binding", "primary-address")
	fs.boolVar(&c.bind, "Get the address for the binding on which the unit should listen", "bind-address")
	fs.boolVar(&c.ingress, "Get the ingress address for the binding", "ingress-address")
	fs.boolVar(&c.egress, "Get the egress subnets for the binding", "egress-subnets")
	addRelationFlag(fs, e, &c.relID, "Specify a relation by id")
}

func (c *networkGet) init(e *env, args []string) error {
	if len(args) < 1 {
		return errors.New("no arguments specified")
	}
	c.binding = args[0]
	if c.binding == "" {
		return errors.New("no binding name specified")
	}
	for _, k := range []struct {
		on   bool
		name string
	}{{c.bind, "bind-address"}, {c.ingress, "ingress-address"}, {c.egress, "egress-subnets"}} {
		if k.on {
			c.keys = append(c.keys, k.name)
		}
	}
	return checkEmpty(args[1:])
}

func (c *networkGet) run(e *env) error {
	ni, err := e.hc.NetworkInfo(e.ctx, c.binding, c.relID)
	if errors.Is(err, hookctx.ErrNotFound) || (err == nil && len(ni.BindAddresses) == 0) {
		return fmt.Errorf("no network config found for binding %q", c.binding)
	}
	if err != nil {
		return err
	}
	if !c.primary && len(c.keys) == 0 {
		return c.out.write(e, ni)
	}
	first := ""
	if addrs := ni.BindAddresses[0].Addresses; len(addrs) > 0 {
		first = addrs[0].Value
	}
	noAddr := fmt.Errorf("no addresses attached to space for binding %q", c.binding)
	if c.primary {
		if len(c.keys) > 0 {
			return errors.New("--primary-address must be the only flag specified")
		}
		if first == "" {
			return noAddr
		}
		return c.out.write(e, first)
	}
	values := map[string]any{}
	if c.egress {
		values["egress-subnets"] = ni.EgressSubnets
	}
	if c.ingress {
		ingress := first
		if len(ni.IngressAddresses) > 0 {
			ingress = ni.IngressAddresses[0]
		}
		if ingress == "" {
			return noAddr
		}
		values["ingress-address"] = ingress
	}
	if c.bind {
		values["bind-address"] = first
	}
	if len(c.keys) == 1 {
		return c.out.write(e, values[c.keys[0]])
	}
	return c.out.write(e, values)
}

type goalState struct{ out output }

func (c *goalState) info() info {
	return info{name: "goal-state", purpose: "Print the status of the charm's peers and related units.", doc: `
'goal-state' command will list the charm units and relations, specifying their status and
their relationship to other units in different charms.`}
}

func (c *goalState) setFlags(fs *flagSet, e *env)     { c.out.addFlags(fs, "yaml") }
func (c *goalState) init(e *env, args []string) error { return checkEmpty(args) }

// goalStatus is goal-state's display form of one entry.
type goalStatus struct {
	Status string `json:"status" yaml:"status"`
	Since  string `json:"since,omitempty" yaml:"since,omitempty"`
}

type goalStateDisplay struct {
	Units     map[string]goalStatus            `json:"units" yaml:"units"`
	Relations map[string]map[string]goalStatus `json:"relations" yaml:"relations"`
}

func displayGoal(g hookctx.GoalStatus) goalStatus {
	d := goalStatus{Status: g.Status}
	if !g.Since.IsZero() {
		d.Since = g.Since.UTC().Format("2006-01-02 15:04:05Z")
	}
	return d
}

func (c *goalState) run(e *env) error {
	gs, err := e.hc.GoalState(e.ctx)
	if err != nil {
		return err
	}
	out := goalStateDisplay{Units: map[string]goalStatus{}, Relations: map[string]map[string]goalStatus{}}
	for u, st := range gs.Units {
		out.Units[u] = displayGoal(st)
	}
	for ep, m := range gs.Relations {
		out.Relations[ep] = map[string]goalStatus{}
		for name, st := range m {
			out.Relations[ep][name] = displayGoal(st)
		}
	}
	return c.out.write(e, out)
}
