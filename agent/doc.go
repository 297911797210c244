// Package agent is the machine and unit agent that runs charms by the Juju
// charm contract (CHARM-CONTRACT.md). Not built yet: tracked by its own issue.
package agent
