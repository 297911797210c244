// Package agent is the machine agent that runs charms by the Juju charm
// contract (CHARM-CONTRACT.md): cmd/drover-agent's entry points. The
// connection lives in internal/apiconn, the per-machine supervisor in
// internal/machine, the per-unit resolver loop in internal/uniter, and the
// hook tools in internal/hookctx and internal/hooktools. See docs/agent.md.
package agent
