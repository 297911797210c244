package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// devAddrs are the addresses a dev federation listens on. Its state is
// bound to them: the controllers' raft configuration and certificates name
// their addresses, the hub's registrations name the controllers', and
// identities are bound to the issuer's URL. The state dir records them
// (addressesFile) before anything is made there.
type devAddrs struct {
	Hub  string `json:"hub-listen"`
	IDP  string `json:"idp-listen"`
	East string `json:"east-listen"`
	West string `json:"west-listen"`
}

// addressesFile, in the state dir, records the federation's addresses.
const addressesFile = "addresses.json"

// devAddr is one address flag of droverd dev.
type devAddr struct {
	flag    string  // its name, without the dashes
	value   *string // its field in devAddrs
	given   string  // the flag's value
	changed bool    // whether the command line set it
	pair    bool    // a controller: its raft port is the API port + 1
}

// addrList lists a's fields as flags, with the values given and whether
// the command line set them.
func addrList(a *devAddrs, given devAddrs, changed func(string) bool) []devAddr {
	return []devAddr{
		{flag: "hub-listen", value: &a.Hub, given: given.Hub, changed: changed("hub-listen")},
		{flag: "idp-listen", value: &a.IDP, given: given.IDP, changed: changed("idp-listen")},
		{flag: "east-listen", value: &a.East, given: given.East, changed: changed("east-listen"), pair: true},
		{flag: "west-listen", value: &a.West, given: given.West, changed: changed("west-listen"), pair: true},
	}
}

// addrProbe answers whether addresses are free and finds free ones; tests
// substitute their own.
type addrProbe struct {
	// check returns an error when addr (and with pair the next port) cannot
	// be listened on.
	check func(addr string, pair bool) error
	// free returns a free address on host (with pair, two consecutive
	// ports), other than the ones in taken.
	free func(host string, pair bool, taken []string) (string, error)
}

var netProbe = addrProbe{check: checkListen, free: freeAddr}

// resolveDevAddrs decides the addresses of a dev federation whose state dir
// recorded rec (nil: a new state dir), from the flags' values (given) and
// which ones the command line set. A recorded state keeps its addresses: a
// flag set to another address is a usage error offering --reset. A new
// state takes the flags' values, and for a default whose port another
// process holds, a free port instead. Every address is checked free.
func resolveDevAddrs(stateDir string, rec *devAddrs, given devAddrs, changed func(string) bool, probe addrProbe) (devAddrs, error) {
	var out devAddrs
	list := addrList(&out, given, changed)
	if rec != nil {
		recorded := addrList(rec, devAddrs{}, changed)
		var differ []string
		for i, a := range list {
			*a.value = *recorded[i].value
			if a.changed && a.given != *a.value {
				differ = append(differ, fmt.Sprintf("--%s %s (the state has %s)", a.flag, a.given, *a.value))
			}
		}
		if len(differ) > 0 {
			return out, usageError{fmt.Errorf("the dev federation in %s was made on other addresses than %s; "+
				"its controllers, hub and identities are bound to them. Run droverd dev without those flags to start it again on its addresses, "+
				"or add --reset to delete that state and start afresh on the new ones", stateDir, strings.Join(differ, ", "))}
		}
		for _, a := range list {
			if err := probe.check(*a.value, a.pair); err != nil {
				return out, fmt.Errorf("--%s %s: %w; the dev federation in %s is bound to this address: stop what holds it, "+
					"or add --reset to delete that state and start afresh on free ports", a.flag, *a.value, err, stateDir)
			}
		}
		return out, nil
	}
	var taken []string
	for _, a := range list {
		*a.value = a.given
		err := probe.check(a.given, a.pair)
		switch {
		case err == nil:
		case a.changed:
			return out, usageError{fmt.Errorf("--%s %s: %w", a.flag, a.given, err)}
		default:
			host, _, serr := net.SplitHostPort(a.given)
			if serr != nil {
				return out, usageError{fmt.Errorf("--%s %s: %w", a.flag, a.given, serr)}
			}
			if *a.value, err = probe.free(host, a.pair, taken); err != nil {
				return out, fmt.Errorf("--%s: the default %s is in use and no free port was found: %w", a.flag, a.given, err)
			}
		}
		taken = append(taken, *a.value)
	}
	return out, nil
}

// readAddrRecord reads the state dir's recorded addresses: nil when it has
// none (a new state dir). A state dir without a record whose dev.json
// names every address (one made before addresses were recorded) is bound
// to those.
func readAddrRecord(stateDir string) (*devAddrs, error) {
	path := filepath.Join(stateDir, addressesFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return addrsOfDevInfo(filepath.Join(stateDir, "dev.json")), nil
	}
	if err != nil {
		return nil, err
	}
	var a devAddrs
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w (delete the state with --reset)", path, err)
	}
	if a.Hub == "" || a.IDP == "" || a.East == "" || a.West == "" {
		return nil, fmt.Errorf("%s lacks an address (delete the state with --reset)", path)
	}
	return &a, nil
}

// addrsOfDevInfo reads the addresses from the URLs of the dev.json at
// path: nil when it is missing or lacks one.
func addrsOfDevInfo(path string) *devAddrs {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var info DevInfo
	if json.Unmarshal(b, &info) != nil {
		return nil
	}
	host := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		return u.Host
	}
	a := devAddrs{Hub: host(info.HubURL), IDP: host(info.Issuer)}
	for _, c := range info.Controllers {
		switch c.Name {
		case "east":
			a.East = host(c.URL)
		case "west":
			a.West = host(c.URL)
		}
	}
	if a.Hub == "" || a.IDP == "" || a.East == "" || a.West == "" {
		return nil
	}
	return &a
}

// writeAddrRecord records the federation's addresses in its state dir.
func writeAddrRecord(stateDir string, a devAddrs) error {
	b, _ := json.MarshalIndent(a, "", "  ")
	tmp := filepath.Join(stateDir, addressesFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(stateDir, addressesFile))
}

// checkListen listens on addr (and with pair on the next port too) and
// closes at once: an error says why a server could not.
func checkListen(addr string, pair bool) error {
	addrs := []string{addr}
	if pair {
		next, err := nextPort(addr)
		if err != nil {
			return err
		}
		addrs = append(addrs, next)
	}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%s is in use by another process", a)
			}
			return err
		}
		if err := ln.Close(); err != nil {
			return err
		}
	}
	return nil
}

// nextPort is addr with its port plus one (a controller's raft address).
func nextPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65534 {
		return "", fmt.Errorf("%s: want HOST:PORT with a port from 1 to 65534", addr)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// freeAddr finds a free port on host (with pair, a free port whose
// successor is free too), outside taken.
func freeAddr(host string, pair bool, taken []string) (string, error) {
	for range 100 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", err
		}
		if clashes(addr, pair, taken) {
			continue
		}
		if checkListen(addr, pair) == nil {
			return addr, nil
		}
	}
	return "", fmt.Errorf("no free port on %s after 100 tries", host)
}

// clashes reports whether addr (or with pair its successor) is one of
// taken or a successor of one of them (the controllers' raft ports).
func clashes(addr string, pair bool, taken []string) bool {
	mine := []string{addr}
	if next, err := nextPort(addr); pair && err == nil {
		mine = append(mine, next)
	}
	for _, t := range taken {
		theirs := []string{t}
		if next, err := nextPort(t); err == nil {
			theirs = append(theirs, next)
		}
		for _, m := range mine {
			for _, o := range theirs {
				if m == o {
					return true
				}
			}
		}
	}
	return false
}
