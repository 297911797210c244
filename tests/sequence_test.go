package tests

import (
	"fmt"
	"strings"
)

// validSequence checks a unit's recorded hook sequence against
// CHARM-CONTRACT §2: install first; start after config-changed; relation
// hooks of a relation only after its -created (peers and relations that
// existed at install); -changed for a unit only after its -joined; no hook
// for a unit after its -departed unless it joined again; -broken last for
// its endpoint; stop then remove at the end. A hook re-run after a crash
// may repeat immediately.
func validSequence(lines []string, subordinate bool) error {
	if len(lines) == 0 {
		return fmt.Errorf("no hooks ran")
	}
	var prev string
	started, installed := false, false
	created := map[string]bool{} // endpoint
	joined := map[string]bool{}  // endpoint + " " + unit
	broken := map[string]bool{}  // endpoint
	for i, line := range lines {
		if line == prev {
			continue // re-run
		}
		prev = line
		hook, remote, _ := strings.Cut(line, " ")
		if i == 0 && hook != "install" {
			return fmt.Errorf("line %d: first hook is %q, not install", i+1, hook)
		}
		if hook == "install" {
			if installed {
				return fmt.Errorf("line %d: install ran twice", i+1)
			}
			installed = true
			continue
		}
		if hook == "start" {
			started = true
		}
		if ep, kind, ok := strings.Cut(hook, "-relation-"); ok {
			if broken[ep] {
				return fmt.Errorf("line %d: %s after %s-relation-broken", i+1, hook, ep)
			}
			if kind != "created" && !created[ep] {
				return fmt.Errorf("line %d: %s before %s-relation-created", i+1, hook, ep)
			}
			key := ep + " " + remote
			switch kind {
			case "created":
				created[ep] = true
			case "joined":
				if joined[key] {
					return fmt.Errorf("line %d: %s joined twice", i+1, key)
				}
				joined[key] = true
			case "changed":
				if remote != "" && !joined[key] {
					return fmt.Errorf("line %d: changed for %s before joined", i+1, key)
				}
			case "departed":
				if !joined[key] {
					return fmt.Errorf("line %d: departed for %s that never joined", i+1, key)
				}
				delete(joined, key)
			case "broken":
				for k := range joined {
					if strings.HasPrefix(k, ep+" ") {
						return fmt.Errorf("line %d: broken while %s is still joined", i+1, k)
					}
				}
				broken[ep] = true
				delete(created, ep)
			}
			continue
		}
		if hook == "update-status" && !started && !subordinate {
			return fmt.Errorf("line %d: update-status before start", i+1)
		}
	}
	return nil
}
