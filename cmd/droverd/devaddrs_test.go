package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProbe holds the addresses in busy; free hands out 127.0.0.1:2000,
// 127.0.0.1:2002, ...
func fakeProbe(busy ...string) addrProbe {
	next := 2000
	return addrProbe{
		check: func(addr string, pair bool) error {
			for _, b := range busy {
				if b == addr {
					return fmt.Errorf("%s is in use by another process", addr)
				}
			}
			return nil
		},
		free: func(host string, pair bool, taken []string) (string, error) {
			next += 2
			return net.JoinHostPort(host, fmt.Sprint(next)), nil
		},
	}
}

var devDefaults = devAddrs{Hub: "127.0.0.1:17080", IDP: "127.0.0.1:17090", East: "127.0.0.1:17070", West: "127.0.0.1:17072"}

func setFlags(names ...string) func(string) bool {
	return func(n string) bool {
		for _, s := range names {
			if s == n {
				return true
			}
		}
		return false
	}
}

// TestDevAddressesKeptByTheState: a state dir that recorded its addresses
// starts on them again whatever the defaults are; a flag naming another
// address is a usage error naming the flag, both addresses and --reset.
func TestDevAddressesKeptByTheState(t *testing.T) {
	rec := &devAddrs{Hub: "127.0.0.1:3000", IDP: "127.0.0.1:3001", East: "127.0.0.1:3002", West: "127.0.0.1:3004"}
	got, err := resolveDevAddrs("/state", rec, devDefaults, setFlags(), fakeProbe())
	if err != nil || got != *rec {
		t.Fatalf("a recorded state without flags: %+v, %v; want %+v", got, err, *rec)
	}
	// The same address given again is no disagreement.
	given := devDefaults
	given.East = rec.East
	if got, err := resolveDevAddrs("/state", rec, given, setFlags("east-listen"), fakeProbe()); err != nil || got != *rec {
		t.Fatalf("--east-listen as recorded: %+v, %v", got, err)
	}
	given.East = "127.0.0.1:4000"
	_, err = resolveDevAddrs("/state", rec, given, setFlags("east-listen"), fakeProbe())
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("--east-listen other than recorded: %v, want a usage error", err)
	}
	for _, want := range []string{"/state", "--east-listen 127.0.0.1:4000 (the state has 127.0.0.1:3002)", "--reset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// A recorded address another process holds is said at once, with
	// --reset as the way out.
	_, err = resolveDevAddrs("/state", rec, devDefaults, setFlags(), fakeProbe(rec.Hub))
	if err == nil || !strings.Contains(err.Error(), "--hub-listen 127.0.0.1:3000: 127.0.0.1:3000 is in use") || !strings.Contains(err.Error(), "--reset") {
		t.Errorf("a recorded address in use: %v", err)
	}
}

// TestDevAddressesOfANewState: a new state takes the flags' values; a
// default in use is replaced by a free address, a given one in use is a
// usage error.
func TestDevAddressesOfANewState(t *testing.T) {
	got, err := resolveDevAddrs("/state", nil, devDefaults, setFlags(), fakeProbe())
	if err != nil || got != devDefaults {
		t.Fatalf("free defaults: %+v, %v", got, err)
	}
	got, err = resolveDevAddrs("/state", nil, devDefaults, setFlags(), fakeProbe(devDefaults.Hub, devDefaults.East))
	want := devDefaults
	want.Hub, want.East = "127.0.0.1:2002", "127.0.0.1:2004"
	if err != nil || got != want {
		t.Fatalf("defaults in use: %+v, %v; want %+v", got, err, want)
	}
	_, err = resolveDevAddrs("/state", nil, devDefaults, setFlags("hub-listen"), fakeProbe(devDefaults.Hub))
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--hub-listen 127.0.0.1:17080: 127.0.0.1:17080 is in use") {
		t.Fatalf("a given address in use: %v", err)
	}
}

// TestDevFreeAddressesOnTheNetwork: checkListen sees a port a listener
// holds, for a controller its raft port (the next one) too, and freeAddr
// finds a pair of free ports clear of the addresses already taken.
func TestDevFreeAddressesOnTheNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := ln.Addr().(*net.TCPAddr)
	if err := checkListen(held.String(), false); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("checkListen %s, held: %v", held, err)
	}
	below := fmt.Sprintf("127.0.0.1:%d", held.Port-1)
	if err := checkListen(below, true); err == nil {
		t.Errorf("checkListen %s as a controller (raft on %s, held): no error", below, held)
	}
	addr, err := freeAddr("127.0.0.1", true, []string{held.String()})
	if err != nil {
		t.Fatal(err)
	}
	if checkListen(addr, true) != nil || clashes(addr, true, []string{held.String()}) {
		t.Errorf("freeAddr: %s, not free or clashing with %s", addr, held)
	}
}

// TestDevAddressesOfAnOlderStateDir: a state dir without addresses.json
// whose dev.json names the federation's URLs is bound to their addresses;
// one without either is new.
func TestDevAddressesOfAnOlderStateDir(t *testing.T) {
	dir := t.TempDir()
	if rec, err := readAddrRecord(dir); rec != nil || err != nil {
		t.Fatalf("an empty state dir: %+v, %v", rec, err)
	}
	info := DevInfo{HubURL: "https://127.0.0.1:3000", Issuer: "http://127.0.0.1:3001/dex",
		Controllers: []DevController{{Name: "east", URL: "https://127.0.0.1:3002"}, {Name: "west", URL: "https://127.0.0.1:3004"}}}
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "dev.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := readAddrRecord(dir)
	want := devAddrs{Hub: "127.0.0.1:3000", IDP: "127.0.0.1:3001", East: "127.0.0.1:3002", West: "127.0.0.1:3004"}
	if err != nil || rec == nil || *rec != want {
		t.Fatalf("a state dir with dev.json only: %+v, %v; want %+v", rec, err, want)
	}
	// The record, once written, is what counts.
	other := want
	other.Hub = "127.0.0.1:4000"
	if err := writeAddrRecord(dir, other); err != nil {
		t.Fatal(err)
	}
	if rec, err := readAddrRecord(dir); err != nil || rec == nil || *rec != other {
		t.Fatalf("a recorded state dir: %+v, %v; want %+v", rec, err, other)
	}
}
