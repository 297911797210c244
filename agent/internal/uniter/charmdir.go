package uniter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/charm"
)

// charmInfo is what the uniter reads from the deployed charm.
type charmInfo struct {
	sha      string
	config   *charm.Config
	bindings map[string]bool // endpoints, extra bindings, juju-info
	declared map[string]bool // endpoints the charm declares
}

// deployCharm makes the charm directory hold charm sha and records it as
// deployed. Files the charm created are kept, files only the previous charm
// had are removed (CHARM-CONTRACT §1.1, charmFiles).
func (u *Uniter) deployCharm(ctx context.Context, sha string) error {
	if u.local.DeployedSHA == sha {
		ok, err := u.files.holds(sha)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	if err := u.expandCharm(ctx, sha); err != nil {
		return err
	}
	u.local.DeployedSHA = sha
	return u.save()
}

// expandCharm downloads, verifies and deploys charm sha's files without
// recording it in the local state: the caller saves that with whatever
// goes with it.
func (u *Uniter) expandCharm(ctx context.Context, sha string) error {
	data, err := u.cfg.Download(ctx, sha)
	if err != nil {
		return fmt.Errorf("download charm %s: %w", sha, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != sha {
		return fmt.Errorf("downloaded charm has sha256 %s, want %s", got, sha)
	}
	if err := u.files.deploy(sha, data); err != nil {
		return fmt.Errorf("deploy charm %s: %w", sha, err)
	}
	u.mu.Lock()
	u.charmCfg = nil
	u.mu.Unlock()
	u.log.Info("charm deployed", "sha256", sha)
	return nil
}

// forceDeploy is a forced upgrade while the unit is in error (Juju's
// deploy operation committed over an interrupted hook): the new charm goes
// on disk and the failed hook stays failed in l.Op, to be retried (by the
// backoff or `resolved`) with the new charm's code. No upgrade-charm runs
// for this change (CHARM-CONTRACT §2.3): the unit counts as upgraded once
// the files are there, unless the failed hook is install or upgrade-charm,
// whose commit records the charm they ran with, so they take it over.
//
// The deployed and the recorded charm are saved together, after the files
// are in place: a crash before that leaves DeployedSHA on the old charm,
// so the resolver decides the same deployment again and it converges; the
// failed hook is never touched but for its hash.
func (u *Uniter) forceDeploy(ctx context.Context, sha string) error {
	h := u.local.Op.Hook
	if u.local.Op.Kind != OpRunHook || h == nil {
		return fmt.Errorf("forced charm deployment without a failed hook (op %q)", u.local.Op.Kind)
	}
	if err := u.expandCharm(ctx, sha); err != nil {
		return err
	}
	u.local.DeployedSHA = sha
	if h.Kind == HookInstall || h.Kind == HookUpgradeCharm {
		hook := *h
		hook.Hash = sha
		u.local.Op.Hook = &hook
	} else {
		u.local.CharmSHA = sha
	}
	if err := u.save(); err != nil {
		return err
	}
	u.log.Info("forced charm upgrade while in error; the failed hook runs with it", "sha256", sha, "hook", h.Name())
	u.logRemote(ctx, "INFO", "juju.worker.uniter", fmt.Sprintf("forced upgrade to charm %s: hook %q stays failed and is retried with it", sha, h.Name()))
	return nil
}

// charm returns the deployed charm's config schema and bindings.
func (u *Uniter) charm() *charmInfo {
	u.mu.Lock()
	ci := u.charmCfg
	u.mu.Unlock()
	if ci != nil && ci.sha == u.local.DeployedSHA {
		return ci
	}
	ci = &charmInfo{sha: u.local.DeployedSHA, bindings: map[string]bool{"juju-info": true}, declared: map[string]bool{}}
	if data, err := os.ReadFile(filepath.Join(u.charmDir(), "config.yaml")); err == nil {
		if c, err := charm.ParseConfig(data); err == nil {
			ci.config = c
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		u.log.Warn("cannot read config.yaml", "err", err)
	}
	if data, err := os.ReadFile(filepath.Join(u.charmDir(), "metadata.yaml")); err == nil {
		if m, err := charm.ParseMeta(data); err == nil {
			for _, sec := range []map[string]charm.Endpoint{m.Provides, m.Requires, m.Peers} {
				for name := range sec {
					ci.bindings[name] = true
					ci.declared[name] = true
				}
			}
			for _, b := range m.ExtraBindings {
				ci.bindings[b] = true
			}
		}
	}
	u.mu.Lock()
	u.charmCfg = ci
	u.mu.Unlock()
	return ci
}

// typedSettings converts the wire config (numbers as json.Number) to the
// option types: int64, float64, bool or string.
func typedSettings(cfg *charm.Config, in map[string]any) charm.Settings {
	out := charm.Settings{}
	for k, v := range in {
		n, isNum := v.(json.Number)
		var typ charm.OptionType
		if cfg != nil {
			typ = cfg.Options[k].Type
		}
		switch {
		case isNum && typ == charm.TypeFloat:
			f, _ := n.Float64()
			out[k] = f
		case isNum:
			if i, err := n.Int64(); err == nil {
				out[k] = i
			} else {
				f, _ := n.Float64()
				out[k] = f
			}
		default:
			out[k] = v
		}
	}
	return out
}
