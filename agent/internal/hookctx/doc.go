// Package hookctx is the model of one hook (or action) execution as the hook
// tools see it: what the hook may read, and what it has buffered for commit.
//
// Invariants:
//   - A Context belongs to exactly one hook run. It is built by the uniter from
//     a Config before the hook process starts and dropped after it exits.
//   - Relation settings, opened/closed ports and charm state writes are only
//     buffered here. Nothing reaches the controller until the uniter takes
//     Flush's result and commits it atomically after a zero exit; on any other
//     outcome the Context is discarded and the writes vanish (CHARM-CONTRACT §3.4).
//   - Status, workload version, juju-log, action-log and leader settings are
//     immediate: they go straight through Remote or the log function.
//   - A bag read from the controller is cached for the rest of the hook. A read
//     of the unit's own bag, or of its own application's bag while leader,
//     returns the local view: the controller copy overlaid with this hook's
//     buffered writes (§3.3).
//   - is-leader answers are cached for LeaderCacheTTL, matching the 30 s
//     guarantee of the leadership lease (§6.1).
//   - A Context composes two sides with their own methods: Ports (open-port,
//     close-port, opened-ports) and ActionRun (the action-* tools). The
//     Context owns the rest and collects every buffer in Flush.
//   - Methods are safe for concurrent use, although the tool server runs one
//     command at a time per context.
package hookctx
