package testkit

import (
	"net"
	"strconv"
	"testing"

	"github.com/droverhq/drover/internal/freeport"
)

// ReservePort returns a loopback TCP port that was free a moment ago and has
// not been returned before by this process. It is for programs (benchmarks,
// dev servers) that have no testing.TB; tests use FreePort.
func ReservePort() (int, error) { return freeport.Reserve() }

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
