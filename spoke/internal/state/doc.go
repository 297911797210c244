// Package state is the spoke's replicated model store: the raft command
// contract (commands.go), the go-memdb store the FSM applies commands to,
// the FSM with its snapshots, and the event broker the watch streams read.
//
// Invariants:
//
//   - Apply is pure. Every ID, timestamp, random value and password hash
//     comes in the command; sequences (machine ids, unit numbers, relation
//     ids, task ids) are taken from counters stored on the model and the
//     application, advanced inside Apply and never reused.
//   - MessageType numbers are append-only and never renumbered.
//   - A command either applies whole or not at all: any error aborts the
//     memdb transaction. Errors are *api.Error values (errors.Is against the
//     api sentinels).
//   - Stored objects are immutable once inserted; writers copy first.
//   - Every object carries CreateIndex/ModifyIndex, and every write updates
//     the index table for its table in the same transaction.
package state
