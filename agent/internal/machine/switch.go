package machine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/droverhq/drover/agent/internal/uniter"
	"github.com/droverhq/drover/api"
)

// moveTo makes the agent the target controller's: its addresses and CA
// are persisted, agent.conf first (rewritten atomically, keeping its mode
// and owner) and the saved controller list next, then the connection
// switches to it. A crash in between resumes: the agent dials the
// addresses it has and either reaches the target or is redirected to it
// again. Moving where the agent already is changes nothing.
func (a *Agent) moveTo(t api.TargetController) error {
	a.moveMu.Lock()
	defer a.moveMu.Unlock()
	if len(t.Addresses) == 0 || t.CACert == "" {
		return fmt.Errorf("the target controller %s names no addresses or no CA certificate", t.ControllerUUID)
	}
	addrs, ca := a.conn.Controller()
	if bytes.Equal(ca, []byte(t.CACert)) && slices.ContainsFunc(t.Addresses, func(s string) bool { return slices.Contains(addrs, s) }) {
		return nil
	}
	if err := rewriteAgentConf(a.cfg.ConfigPath, t.Addresses, t.CACert); err != nil {
		return fmt.Errorf("persist the target controller in %s: %w", a.cfg.ConfigPath, err)
	}
	a.saveAddresses(t.Addresses)
	if err := a.conn.Switch(t.Addresses, []byte(t.CACert)); err != nil {
		return err
	}
	a.log.Info("moved to the model's new controller", "controller", t.ControllerName, "uuid", t.ControllerUUID, "addresses", t.Addresses)
	return nil
}

// redirected is the connection's OnRedirect: a login refused because the
// model moved.
func (a *Agent) redirected(t api.TargetController) {
	if err := a.moveTo(t); err != nil {
		a.log.Error("cannot follow the model to its new controller", "err", err)
	}
}

// rewriteAgentConf sets agent.conf's controller addresses and CA, keeping
// every other field as it is: a new file, with the old one's mode and
// owner, renamed over it.
func rewriteAgentConf(path string, addrs []string, caCert string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var conf map[string]json.RawMessage
	if err := json.Unmarshal(data, &conf); err != nil {
		return err
	}
	conf["controller-addresses"], _ = json.Marshal(addrs)
	conf["ca-cert"], _ = json.Marshal(caCert)
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return uniter.WriteFileAtomicWith(path, append(out, '\n'), func(f *os.File) error { return sameModeAndOwner(f, st) })
}

// sameModeAndOwner gives f st's permissions and owner.
func sameModeAndOwner(f *os.File, st os.FileInfo) error {
	if err := f.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid()) {
		return f.Chown(int(sys.Uid), int(sys.Gid))
	}
	return nil
}
