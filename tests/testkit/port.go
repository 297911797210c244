package testkit

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
)

// handedOut remembers every port given out by this process, so two callers
// never receive the same port even though each listener is closed at once.
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: make(map[int]bool)}

// maxPortAttempts bounds the search when the kernel keeps returning ports
// that this process already handed out.
const maxPortAttempts = 100

// ReservePort returns a loopback TCP port that was free a moment ago and has
// not been returned before by this process. It is for programs (benchmarks,
// dev servers) that have no testing.TB; tests use FreePort.
func ReservePort() (int, error) {
	for range maxPortAttempts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("testkit: listen on loopback: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if err := ln.Close(); err != nil {
			return 0, fmt.Errorf("testkit: close probe listener: %w", err)
		}
		handedOut.mu.Lock()
		dup := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.mu.Unlock()
		if !dup {
			return port, nil
		}
	}
	return 0, fmt.Errorf("testkit: no unused loopback port after %d attempts", maxPortAttempts)
}

// FreePort returns a loopback TCP port not in use and not handed out before
// in this process. It fails the test if none can be found.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := ReservePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return port
}

// FreeAddr returns "127.0.0.1:N" for a port from FreePort.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}
