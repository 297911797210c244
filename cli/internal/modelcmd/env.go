// Package modelcmd is what every drover command shares: the invocation's
// environment (Env: its streams, clock, terminal and client store), the
// connection to a controller, a hub or a model named on the command line
// or current in the store, the flags that name them, usage errors (exit
// code 2), and the output formats and tables.
//
// It reaches controllers only through the api package.
package modelcmd

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/droverhq/drover/cli/internal/clientstore"
)

// Env is one drover invocation's environment, shared by its commands.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main; a map in tests).
	Getenv func(string) string
	// Now is the clock (status timestamps, debug-log lines).
	Now func() time.Time
	// Terminal is whether Stdout is a terminal: colour, spinners and
	// in-place redraws only then. StdinTerminal gates prompts and the shell.
	Terminal      bool
	StdinTerminal bool
	// Executable is drover's own path, to find droverd next to it.
	Executable string
	// Width is the terminal width for --watch redraws (0: unknown).
	Width int

	// Store is the client store.
	Store *clientstore.Store
	// AtHub is whether the command's connection is to a hub (Explain).
	AtHub bool

	// mu guards opened: the controller connections the commands opened,
	// whose last raft index RecordIndexes keeps in the store.
	mu     sync.Mutex
	opened []*Conn
}

// track remembers c for RecordIndexes.
func (a *Env) track(c *Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.opened = append(a.opened, c)
}

// RecordIndexes keeps, for each controller the commands reached, the
// highest raft index it answered with, so that the next invocation reads
// nothing older (read-your-writes across invocations, ADR 0028). Through
// a hub, those are the controllers of the models the commands called,
// under the same UUIDs as when reached directly. It runs when a command
// ends, whether it failed or not.
func (a *Env) RecordIndexes() error {
	a.mu.Lock()
	opened := a.opened
	a.opened = nil
	a.mu.Unlock()
	if a.Store == nil {
		return nil
	}
	var errs []error
	for _, c := range opened {
		indexes := map[string]uint64{c.Details.UUID: c.Client.Index()}
		if c.Details.Hub {
			indexes = c.Client.Indexes()
		}
		if err := a.Store.RecordIndexes(indexes); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
