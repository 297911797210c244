package charm

import (
	"fmt"
	"regexp"
	"strings"
)

// OSBase is an OS base as Juju spells it: NAME@CHANNEL, e.g. ubuntu@24.04.
type OSBase struct {
	Name    string
	Channel string
}

var (
	baseNameRE    = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	baseChannelRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*(/[a-z0-9-]+)?$`)
	trackRE       = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)
)

// ParseBase parses NAME@CHANNEL.
func ParseBase(s string) (OSBase, error) {
	name, ch, ok := strings.Cut(s, "@")
	if !ok || !baseNameRE.MatchString(name) || !baseChannelRE.MatchString(ch) {
		return OSBase{}, fmt.Errorf("want NAME@VERSION, such as ubuntu@24.04")
	}
	return OSBase{Name: name, Channel: ch}, nil
}

// Channel is a charm channel: TRACK/RISK/BRANCH, track and branch
// optional; the track defaults to latest.
type Channel struct {
	Track, Risk, Branch string
}

// Risks are a channel's risk levels, most stable first.
var Risks = []string{"stable", "candidate", "beta", "edge"}

func isRisk(s string) bool {
	for _, r := range Risks {
		if s == r {
			return true
		}
	}
	return false
}

// ParseChannel parses [TRACK/]RISK[/BRANCH], or a bare TRACK (risk stable).
func ParseChannel(s string) (Channel, error) {
	parts := strings.Split(s, "/")
	var c Channel
	switch len(parts) {
	case 1:
		if isRisk(parts[0]) {
			c = Channel{Track: "latest", Risk: parts[0]}
		} else {
			c = Channel{Track: parts[0], Risk: "stable"}
		}
	case 2:
		if isRisk(parts[0]) {
			c = Channel{Track: "latest", Risk: parts[0], Branch: parts[1]}
		} else {
			c = Channel{Track: parts[0], Risk: parts[1]}
		}
	case 3:
		c = Channel{Track: parts[0], Risk: parts[1], Branch: parts[2]}
	default:
		return c, fmt.Errorf("want [TRACK/]RISK[/BRANCH], such as latest/stable or 2/edge")
	}
	if !trackRE.MatchString(c.Track) || (c.Branch != "" && !trackRE.MatchString(c.Branch)) {
		return c, fmt.Errorf("want [TRACK/]RISK[/BRANCH], such as latest/stable or 2/edge")
	}
	if !isRisk(c.Risk) {
		return c, fmt.Errorf("risk %q is not one of %s", c.Risk, strings.Join(Risks, ", "))
	}
	return c, nil
}

// String is the channel in full: TRACK/RISK[/BRANCH].
func (c Channel) String() string {
	s := c.Track + "/" + c.Risk
	if c.Branch != "" {
		s += "/" + c.Branch
	}
	return s
}
