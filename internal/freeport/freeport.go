// Package freeport hands out loopback TCP ports that were free a moment
// ago, for servers started on a port chosen in advance (a test's
// PostgreSQL, benchmark clusters).
//
// Invariant: a port is handed out at most once per process, so two callers
// never race for the same port although each probe listener is closed at
// once.
package freeport

import (
	"fmt"
	"net"
	"sync"
)

var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: make(map[int]bool)}

// maxAttempts bounds the search when the kernel keeps returning ports that
// this process already handed out.
const maxAttempts = 100

// Reserve returns a loopback TCP port that was free a moment ago and has
// not been returned before by this process.
func Reserve() (int, error) {
	for range maxAttempts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("freeport: listen on loopback: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if err := ln.Close(); err != nil {
			return 0, fmt.Errorf("freeport: close probe listener: %w", err)
		}
		handedOut.mu.Lock()
		dup := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.mu.Unlock()
		if !dup {
			return port, nil
		}
	}
	return 0, fmt.Errorf("freeport: no unused loopback port after %d attempts", maxAttempts)
}
