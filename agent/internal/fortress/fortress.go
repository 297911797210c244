// Package fortress holds a machine agent's operations while its model
// migrates (Juju's migration fortress): the agent's workers enter it
// before they start an operation (a hook, an action, a command), and it
// refuses them while the latest machine state names a migration. An
// operation already inside finishes; Idle says when none is.
//
// The check and the count share one lock, and the check reads the latest
// state, not the one the worker resolved from: once the minion has seen a
// migration in the state and then found the fortress idle, no operation
// starts until a state without a migration arrives.
package fortress

import (
	"sync"

	"github.com/droverhq/drover/api"
)

// Fortress counts the operations running and refuses new ones while the
// model migrates.
type Fortress struct {
	states func() (*api.MachineState, <-chan struct{})

	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to zero; replaced on entry
	refused int
}

// New returns a fortress that reads the latest machine state from states.
func New(states func() (*api.MachineState, <-chan struct{})) *Fortress {
	idle := make(chan struct{})
	close(idle)
	return &Fortress{states: states, idle: idle}
}

// Enter admits an operation unless the latest state names a migration;
// the operation calls leave (once) when it has finished. Refused, the
// caller waits for the next state.
func (f *Fortress) Enter() (leave func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ms, _ := f.states(); ms != nil && ms.Migration != nil {
		f.refused++
		return nil, false
	}
	if f.running == 0 {
		f.idle = make(chan struct{})
	}
	f.running++
	var once sync.Once
	return func() { once.Do(f.leave) }, true
}

func (f *Fortress) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
	if f.running == 0 {
		close(f.idle)
	}
}

// Idle returns a channel closed once no operation runs (already closed
// when none does).
func (f *Fortress) Idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idle
}

// Refused counts the operations refused so far (for tests: a worker that
// was held tried and was refused).
func (f *Fortress) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}
