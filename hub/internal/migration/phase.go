// Package migration is the hub's model-migration state machine: the
// phases a migration goes through and the one edge table that says which
// phase may follow which.
//
// Invariants:
//   - A phase changes only along an edge of the table (Check); the store
//     refuses any other change, so a crash at any point leaves a migration
//     in a phase the driver knows how to resume.
//   - Abort is possible only before SUCCESS: SUCCESS is the point of no
//     return, after which a migration always ends in DONE or REAPFAILED
//     (the model is migrated either way; REAPFAILED says the source still
//     holds a copy to remove, and a retried reap goes back to REAP).
//   - ABORTED and DONE are final: no edge leaves them.
package migration

import (
	"errors"
	"fmt"
	"slices"
)

// Phase is where a migration is.
type Phase string

// The phases, in the order a successful migration takes them, then the
// abort path and the failed reap.
const (
	// Precheck checks the source and target can take part: versions,
	// capacity, names, charms, units in a settled state.
	Precheck Phase = "PRECHECK"
	// Quiesce makes the source refuse model changes; its agents finish
	// the running hook, hold, and report.
	Quiesce Phase = "QUIESCE"
	// Export serialises the model at one raft index of the source.
	Export Phase = "EXPORT"
	// Import creates the model on the target, hidden, from the export.
	Import Phase = "IMPORT"
	// Validation has every agent dial the target and report.
	Validation Phase = "VALIDATION"
	// Success activates the model on the target and switches the hub's
	// index to it; the source keeps a redirect.
	Success Phase = "SUCCESS"
	// LogTransfer copies the model's log from the source to the target.
	LogTransfer Phase = "LOGTRANSFER"
	// Reap removes the source's copy of the model.
	Reap Phase = "REAP"
	// Done is a finished migration.
	Done Phase = "DONE"
	// Aborting undoes a migration that has not reached SUCCESS: the
	// target forgets its import, the source resumes, agents are released.
	Aborting Phase = "ABORTING"
	// Aborted is a migration undone: the model serves from the source as
	// before.
	Aborted Phase = "ABORTED"
	// ReapFailed is a finished migration whose source copy could not be
	// removed; it may be reaped again.
	ReapFailed Phase = "REAPFAILED"
)

// edges is the only statement of which phase may follow which.
var edges = map[Phase][]Phase{
	Precheck:    {Quiesce, Aborting},
	Quiesce:     {Export, Aborting},
	Export:      {Import, Aborting},
	Import:      {Validation, Aborting},
	Validation:  {Success, Aborting},
	Success:     {LogTransfer},
	LogTransfer: {Reap},
	Reap:        {Done, ReapFailed},
	ReapFailed:  {Reap},
	Aborting:    {Aborted},
	Done:        nil,
	Aborted:     nil,
}

// Phases lists every phase, the successful path first.
func Phases() []Phase {
	return []Phase{Precheck, Quiesce, Export, Import, Validation, Success, LogTransfer, Reap, Done,
		Aborting, Aborted, ReapFailed}
}

// ErrEdge is returned (wrapped) for a phase change the table does not hold.
var ErrEdge = errors.New("migration: no such phase change")

// Parse returns the phase named s.
func Parse(s string) (Phase, error) {
	p := Phase(s)
	if _, ok := edges[p]; !ok {
		return "", fmt.Errorf("migration: unknown phase %q", s)
	}
	return p, nil
}

// Check reports whether a migration in phase from may move to phase to.
func Check(from, to Phase) error {
	next, ok := edges[from]
	if !ok {
		return fmt.Errorf("%w: unknown phase %q", ErrEdge, from)
	}
	if !slices.Contains(next, to) {
		return fmt.Errorf("%w: %s to %s", ErrEdge, from, to)
	}
	return nil
}

// Next lists the phases that may follow p.
func (p Phase) Next() []Phase { return slices.Clone(edges[p]) }

// Final reports whether no phase follows p.
func (p Phase) Final() bool { return len(edges[p]) == 0 }

// Active reports whether a migration in p still holds its model: every
// phase but the final ones and REAPFAILED (the model is migrated; only a
// copy on the source is left). A model has at most one active migration.
func (p Phase) Active() bool { return !p.Final() && p != ReapFailed }

// Abortable reports whether a migration in p may still be aborted: the
// phases before SUCCESS.
func (p Phase) Abortable() bool { return slices.Contains(edges[p], Aborting) }

// Migrated reports whether the model belongs to the target in p: from
// SUCCESS on, a migration cannot be aborted.
func (p Phase) Migrated() bool {
	switch p {
	case Success, LogTransfer, Reap, Done, ReapFailed:
		return true
	}
	return false
}
