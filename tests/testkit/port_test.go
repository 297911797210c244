package testkit

import (
	"net"
	"strings"
	"testing"
)

func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	seen := make(map[int]bool)
	for range 50 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	addr := FreeAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("FreeAddr = %q, want 127.0.0.1:N", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on FreeAddr %s: %v", addr, err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
}
