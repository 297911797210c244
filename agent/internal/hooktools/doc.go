// Package hooktools implements the Juju hook tools (CHARM-CONTRACT §3) over a
// hookctx.Context, the unix-socket server that runs them for a hook process,
// and the client that a tool symlink (argv[0] dispatch) runs.
//
// Invariants:
//   - Tool behaviour is Juju's: flag spellings, defaults, output shapes,
//     "ERROR <message>" on stderr, exit 2 for flag and argument errors and
//     exit 1 for runtime errors.
//   - A tool never mutates anything before it has its stdin. Stdin is sent on
//     demand: the client first sends the request without stdin; a tool that
//     needs it (relation-set/state-set --file -) makes Run answer NeedStdin
//     before any side effect, and only then does the client read its stdin
//     and send the request again. A tool run with stdin attached to a
//     terminal, a pipe held open by a loop, or nothing never blocks on it
//     unless the tool itself needs stdin — as in Juju.
//   - The server accepts only the active context's id and runs one command at
//     a time per context.
package hooktools
