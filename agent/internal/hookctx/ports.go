package hookctx

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/droverhq/drover/api"
)

// PortRange is a port range as open-port takes it. ICMP has From and To 0.
type PortRange struct {
	Protocol string
	From, To int
}

// String renders the range as Juju does: "80/tcp", "1000-2000/udp", "icmp".
func (p PortRange) String() string {
	if p.Protocol == "icmp" {
		return "icmp"
	}
	if p.From == p.To {
		return fmt.Sprintf("%d/%s", p.From, p.Protocol)
	}
	return fmt.Sprintf("%d-%d/%s", p.From, p.To, p.Protocol)
}

// Less orders ranges by protocol, then by number, as Juju sorts them.
func (p PortRange) Less(o PortRange) bool {
	if p.Protocol != o.Protocol {
		return p.Protocol < o.Protocol
	}
	if p.From != o.From {
		return p.From < o.From
	}
	return p.To < o.To
}

// ParsePortRange parses "<port>[/<proto>]", "<from>-<to>[/<proto>]" or
// "icmp". The protocol defaults to tcp.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.ToLower(s)
	proto := "tcp"
	if before, after, ok := strings.Cut(s, "/"); ok {
		s, proto = before, after
	}
	if s == "icmp" {
		if proto != "tcp" && proto != "icmp" {
			return PortRange{}, fmt.Errorf("invalid protocol %q, expected \"tcp\", \"udp\", or \"icmp\"", proto)
		}
		return PortRange{Protocol: "icmp"}, nil
	}
	var p PortRange
	from, to, isRange := strings.Cut(s, "-")
	var err error
	if p.From, err = strconv.Atoi(from); err != nil {
		return PortRange{}, fmt.Errorf("invalid port %q", from)
	}
	p.To = p.From
	if isRange {
		if strings.Contains(to, "-") {
			return PortRange{}, fmt.Errorf("invalid port range %q", s)
		}
		if p.To, err = strconv.Atoi(to); err != nil {
			return PortRange{}, fmt.Errorf("invalid port %q", to)
		}
	}
	p.Protocol = proto
	switch {
	case proto == "icmp":
		return PortRange{}, fmt.Errorf("protocol \"icmp\" doesn't support any ports; got \"%d\"", p.From)
	case proto != "tcp" && proto != "udp":
		return PortRange{}, fmt.Errorf("invalid protocol %q, expected \"tcp\", \"udp\", or \"icmp\"", proto)
	case p.From > p.To:
		return PortRange{}, fmt.Errorf("invalid port range %s", p)
	case p.From < 1 || p.To > 65535:
		return PortRange{}, fmt.Errorf("port range bounds must be between 1 and 65535, got %d-%d", p.From, p.To)
	}
	return p, nil
}

// EndpointPort is a port range on one endpoint; Endpoint "" means all.
type EndpointPort struct {
	Endpoint string
	Range    PortRange
}

// Ports is the port side of a Context: the unit's committed port ranges
// and the hook's pending open and close requests, which reach the
// controller only through Context.Flush. It is safe for concurrent use.
type Ports struct {
	mu        sync.Mutex
	committed map[EndpointPort]bool
	pending   map[EndpointPort]bool // true: open; false: close
}

func newPorts(ports []api.Port) *Ports {
	b := &Ports{committed: map[EndpointPort]bool{}, pending: map[EndpointPort]bool{}}
	for _, p := range ports {
		pr := PortRange{Protocol: p.Protocol, From: p.From, To: p.To}
		if pr.Protocol == "icmp" {
			pr.From, pr.To = 0, 0
		}
		if len(p.Endpoints) == 0 {
			b.committed[EndpointPort{"", pr}] = true
		}
		for _, ep := range p.Endpoints {
			b.committed[EndpointPort{ep, pr}] = true
		}
	}
	return b
}

// Open buffers opening a range on an endpoint ("" for all endpoints).
func (p *Ports) Open(endpoint string, pr PortRange) {
	p.set(EndpointPort{endpoint, pr}, true)
}

// Close buffers closing a range on an endpoint ("" for all endpoints).
func (p *Ports) Close(endpoint string, pr PortRange) {
	p.set(EndpointPort{endpoint, pr}, false)
}

func (p *Ports) set(ep EndpointPort, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.committed[ep] == open {
		delete(p.pending, ep) // back to the committed state: no-op
		return
	}
	p.pending[ep] = open
}

// Opened returns the committed ranges, without this hook's pending
// requests, sorted by endpoint then range.
func (p *Ports) Opened() []EndpointPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []EndpointPort
	for ep := range p.committed {
		out = append(out, ep)
	}
	sortEndpointPorts(out)
	return out
}

func sortEndpointPorts(ps []EndpointPort) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Range != ps[j].Range {
			return ps[i].Range.Less(ps[j].Range)
		}
		return ps[i].Endpoint < ps[j].Endpoint
	})
}

// changes returns the pending requests as the wire's open and close lists.
func (p *Ports) changes() (open, closed []api.Port) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var eps []EndpointPort
	for ep := range p.pending {
		eps = append(eps, ep)
	}
	sortEndpointPorts(eps)
	for _, ep := range eps {
		wp := api.Port{Protocol: ep.Range.Protocol, From: ep.Range.From, To: ep.Range.To}
		if ep.Endpoint != "" {
			wp.Endpoints = []string{ep.Endpoint}
		}
		if p.pending[ep] {
			open = append(open, wp)
		} else {
			closed = append(closed, wp)
		}
	}
	return open, closed
}
