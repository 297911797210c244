// Package format is version 1 of the spoke's replicated format: the JSON
// bodies of raft commands and the records of snapshots. Every byte a
// controller writes into its raft log or its snapshots is the encoding of a
// type declared here, so the public api package can change its structs and
// their JSON without changing what old logs and snapshots mean.
//
// Invariants:
//
//   - The types here never contain api types (TestNoAPITypes). They mirror
//     the api structs the store keeps, field for field; the converters in
//     convert.go map between the two at the codec edge, and
//     TestFieldsCovered fails when an api struct gains a field its format
//     type lacks.
//   - A field's JSON name, omitempty/omitzero and position are permanent:
//     logs and snapshots already written hold them. Add fields; never rename,
//     retype or reorder one. The golden replay test in package state holds a
//     log and a snapshot written by this version.
//   - Record types, like the MessageType numbers of package state, are never
//     renumbered or reused.
package format
