package testkit

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestFaultProxyDrop: Drop closes the connections relayed so far, and the
// proxy relays new ones.
func TestFaultProxyDrop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	p := NewFaultProxy(t, "tcp", ln.Addr().String())
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	old, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := echo(old); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Drop()
	old.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := old.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a dropped connection read %d bytes, %v; want EOF", n, err)
	}
	fresh, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := echo(fresh); err != nil {
		t.Fatalf("a new connection after Drop: %v", err)
	}
}
