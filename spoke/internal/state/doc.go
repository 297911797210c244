// Package state is the spoke's replicated model store: the raft command
// contract (commands.go, one table entry per command, applied by the
// functions of each area's file), the go-memdb store the FSM applies
// commands to and its reads, the FSM, and the events each command
// produces (events.go). Beside it: package tables holds the store's
// layout (schema, state's own rows, snapshot records), package stream the
// broker the FSM publishes events to, and package format the bytes of
// commands and snapshots (version 1), never api structs: requests and
// stored objects are converted at the codec edge (Encode, Decode,
// WriteSnapshot, Restore).
//
// Invariants:
//
//   - Apply is pure. Every ID, timestamp, random value and password hash
//     comes in the command; sequences (machine ids, unit numbers, relation
//     ids, task ids) are taken from counters stored on the model and the
//     application, advanced inside Apply and never reused.
//   - MessageType numbers are append-only and never renumbered; the golden
//     replay test (testdata/replay) holds a log and a snapshot every
//     version must read to the same store and re-encode to the same bytes.
//   - A command either applies whole or not at all: any error aborts the
//     memdb transaction. Errors are *api.Error values (errors.Is against the
//     api sentinels).
//   - Stored objects are immutable once inserted; writers copy first.
//   - Every object carries CreateIndex/ModifyIndex, and every write updates
//     the index table for its table in the same transaction.
//   - Numbers in untyped maps (config, params, results, status data) are
//     json.Number after decoding, in commands and in snapshots alike, so
//     every node holds and re-encodes exactly the same values.
//   - A lease row lives as long as its application; expiry and revocation
//     only vacate it (Holder ""), so Term never repeats for an application.
//   - Events are computed from the transaction's own change set and
//     published after commit; the broker never blocks the FSM.
//   - Entity invariants: names unique per model; relations only between
//     provider and requirer of one interface (or a peer endpoint);
//     container-scoped relations involve a subordinate; application bags
//     are written only by the unexpired lease holder; a unit is dead only
//     after it left every scope and its subordinates are gone; a dying
//     relation goes when its scope empties; a dying application goes when
//     it has neither units nor relations.
package state
