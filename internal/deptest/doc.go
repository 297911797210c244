// Package deptest holds the repository's dependency rules, checked by its
// test against `go list`: what each binary may link and which parts of the
// project may import which. It has no code of its own.
//
// The rules:
//   - The binaries (cmd/droverd, cmd/drover, cmd/drover-agent) link no test
//     support: no package of tests/..., no goleak, and no "testing" except
//     through the few third-party packages that import it themselves.
//   - hub/... and spoke/... never import each other (their tests may).
//   - agent/... imports no hub or spoke package.
//   - The client (cli/... and cmd/drover) links no server code, and cli/...
//     imports of the project only api, charm and internal packages that
//     import nothing of the project themselves.
package deptest
